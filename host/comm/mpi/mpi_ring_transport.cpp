#include "comm/mpi/mpi_ring_transport.hpp"

#include "comm/mpi/mpi_buffer.hpp"

#include <sched.h>
#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <vector>
#include <stdexcept>

namespace gradsweep::comm::mpi {
namespace {

// How the first exchange of a collective waits once its neighbour is late (below): naps of 1/20 of the wait
// so far, from 100 us to 1 ms, so that a late neighbour is noticed at most 5% of the wait later (or 100 us)
// and a long wait tests ten times less often than a short one.
constexpr auto kSpinBeforeNap = std::chrono::microseconds(50);
constexpr long kShortestNapNs = 100'000;
constexpr long kLongestNapNs = 1'000'000;

timespec nap_after(std::chrono::steady_clock::duration waited) {
  const long share = static_cast<long>(std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count() / 20);
  return {0, std::clamp(share, kShortestNapNs, kLongestNapNs)};
}

// Napping in nanosleep wakes up to the thread's timer slack late (50 us by default): ask for 1 us, once
// per thread that waits.
void tighten_timer_slack() {
  thread_local bool tightened = false;
  if (tightened) return;
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);  // best effort: a refusal only makes naps longer
  tightened = true;
}

// Every ring message uses one tag: on a communicator of its own, between one pair of ranks, MPI's
// non-overtaking order then matches the k-th receive with the k-th send, which is the Transport contract.
constexpr int kRingTag = 0;

int byte_count(std::size_t bytes, const std::string& call) {
  if (bytes > static_cast<std::size_t>(INT_MAX))
    throw std::invalid_argument(call + ": a ring segment of " + std::to_string(bytes) + " bytes is over MPI's 2^31-1");
  return static_cast<int>(bytes);
}

}  // namespace

RingTransport::RingTransport(MPI_Comm comm, int rank, int size, std::string call, PeerWaits* waits)
    : comm_(comm),
      rank_(rank),
      size_(size),
      left_((rank + size - 1) % size),
      right_((rank + 1) % size),
      call_(std::move(call)),
      waits_(waits) {
  for (auto& pair : requests_) pair = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
}

// An exception thrown mid-ring leaves requests behind; cancel nothing (a send cannot be cancelled
// portably) but do not leak them either: the job is about to end anyway (a failed collective ends it).
RingTransport::~RingTransport() {
  if (waits_ != nullptr) waits_->clear(this);
  for (auto& pair : requests_)
    for (MPI_Request& r : pair)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
}

ring::Transport::Ticket RingTransport::start(const void* send, std::size_t send_bytes, void* recv,
                                             std::size_t recv_bytes) {
  if (next_ - finished_ >= static_cast<Ticket>(kMaxInFlight))
    throw std::logic_error(call_ + ": more than " + std::to_string(kMaxInFlight) + " ring exchanges in flight");
  auto& pair = requests_[next_ % kMaxInFlight];
  // The receive is posted first so that the neighbour's send finds it waiting.
  if (recv_bytes > 0)
    check_mpi(MPI_Irecv(recv, byte_count(recv_bytes, call_), MPI_BYTE, left_, kRingTag, comm_, &pair[0]), call_,
              "MPI_Irecv");
  if (send_bytes > 0)
    check_mpi(MPI_Isend(send, byte_count(send_bytes, call_), MPI_BYTE, right_, kRingTag, comm_, &pair[1]), call_,
              "MPI_Isend");
  return next_++;
}

// MPI_Request_get_status looks without completing, so the loop below still owns the requests.
void RingTransport::publish_waits(std::array<MPI_Request, 2>& pair) {
  std::vector<int> peers;
  for (int side = 0; side < 2; ++side) {
    if (pair[side] == MPI_REQUEST_NULL) continue;
    int done = 0;
    if (MPI_Request_get_status(pair[side], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done)
      peers.push_back(side == 0 ? left_ : right_);
  }
  waits_->set(this, std::move(peers));
}

void RingTransport::finish(Ticket ticket) {
  if (ticket != finished_) throw std::logic_error(call_ + ": ring exchanges finished out of order");
  auto& pair = requests_[ticket % kMaxInFlight];
  std::array<MPI_Status, 2> statuses;
  // MPI_Waitall would spin inside MPI. Testing and yielding the core between tests costs nothing when
  // the core is free, and when it is not (more ranks than cores, or other work on the machine) it hands
  // the core to the neighbour this exchange is waiting for instead of spinning against it.
  // The first exchange of a collective also waits for the neighbour to reach the collective at all,
  // which takes as long as the ranks' computations differ (tens to hundreds of ms in a training step);
  // yielding through that cost a rank's communication thread 3-10x its useful CPU, taken from the
  // computation on a machine with no spare core (docs/measurements/strategies.md). So that wait naps between tests
  // after a short spin, longer as it goes on (nap_after): a neighbour 1 s late cost a waiting rank 25-30% of a
  // core in 100 us naps. A late neighbour is noticed up to 5% of the wait later, once per collective. The later
  // exchanges find the neighbour there and only yield: napping in every one delayed each handshake
  // (builds that did were 0.6-0.9x as fast on gpt2-small-cpu).
  const bool may_nap = ticket == 0;
  const auto began = std::chrono::steady_clock::now();
  bool napping = false;
  int rc = MPI_SUCCESS, done = 0;
  // A wait this long is worth telling the hang verdict about (checked every 256 tests, then again as
  // often, so that a neighbour that stops answering mid-collective is seen).
  constexpr auto kPublishAfter = std::chrono::milliseconds(100);
  auto published = began;
  bool waiting_published = false;
  std::uint32_t tests = 0;
  while ((rc = MPI_Testall(2, pair.data(), &done, statuses.data())) == MPI_SUCCESS && !done) {
    if (waits_ != nullptr && (++tests & 255U) == 0) {
      const auto now = std::chrono::steady_clock::now();
      if (now - published > kPublishAfter) {
        publish_waits(pair);
        published = now;
        waiting_published = true;
      }
    }
    if (may_nap && !napping && std::chrono::steady_clock::now() - began > kSpinBeforeNap) {
      tighten_timer_slack();
      napping = true;
    }
    if (napping) {
      const timespec nap = nap_after(std::chrono::steady_clock::now() - began);
      nanosleep(&nap, nullptr);
    } else {
      sched_yield();
    }
  }
  ++finished_;
  if (waiting_published) waits_->clear(this);
  if (rc == MPI_ERR_IN_STATUS) {
    for (const MPI_Status& s : statuses) check_mpi(s.MPI_ERROR, call_, "MPI_Testall");
  }
  check_mpi(rc, call_, "MPI_Testall");
}

}  // namespace gradsweep::comm::mpi
