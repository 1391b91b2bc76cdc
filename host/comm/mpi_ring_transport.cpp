#include "comm/mpi_ring_transport.hpp"

#include "comm/mpi_buffer.hpp"

#include <sched.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <stdexcept>

namespace gradsweep::host::mpi {
namespace {

// Every ring message uses one tag: on a communicator of its own, between one pair of ranks, MPI's
// non-overtaking order then matches the k-th receive with the k-th send, which is the Transport contract.
constexpr int kRingTag = 0;

int byte_count(std::size_t bytes, const std::string& call) {
  if (bytes > static_cast<std::size_t>(INT_MAX))
    throw std::invalid_argument(call + ": a ring segment of " + std::to_string(bytes) + " bytes is over MPI's 2^31-1");
  return static_cast<int>(bytes);
}

// An exchange of more than this is sent as several MPI messages, all started at once. Over TCP (Open MPI's
// tcp BTL) each message keeps only a few fragments queued on the socket, refilled when the sending rank is
// scheduled; with one or two large messages in flight the link idles whenever the rank waits for a core,
// and a 2 MiB exchange between two nodes at 1 Gbit/s reached 0.09 GB/s of 0.125 on this 2-core machine.
// Cut into 512 KiB messages the same ring reached 0.11-0.12 (docs/cluster.md, "Measured here"). Over
// shared memory a message costs microseconds, so the ring's segments (its reduction grain) stay as tuned.
std::size_t message_bytes() {
  static const std::size_t bytes = [] {
    const char* v = std::getenv("GRADSWEEP_RING_MESSAGE_BYTES");
    const long parsed = v != nullptr ? std::strtol(v, nullptr, 10) : 0;
    return parsed > 0 ? static_cast<std::size_t>(parsed) : std::size_t{512 * 1024};
  }();
  return bytes;
}

// Starts `bytes` at `data` as pieces of at most message_bytes(), appending their requests.
template <typename Post>
void post_pieces(char* data, std::size_t bytes, std::vector<MPI_Request>& requests, const Post& post) {
  const std::size_t piece = message_bytes();
  for (std::size_t offset = 0; offset < bytes; offset += piece) {
    requests.push_back(MPI_REQUEST_NULL);
    post(data + offset, std::min(piece, bytes - offset), &requests.back());
  }
}

}  // namespace

RingTransport::RingTransport(MPI_Comm comm, int rank, int size, std::string call)
    : comm_(comm), rank_(rank), size_(size), left_((rank + size - 1) % size), right_((rank + 1) % size),
      call_(std::move(call)) {}

// An exception thrown mid-ring leaves requests behind; cancel nothing (a send cannot be cancelled
// portably) but do not leak them either: the job is about to end anyway (a failed collective ends it).
RingTransport::~RingTransport() {
  for (auto& exchange : requests_)
    for (MPI_Request& r : exchange)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
}

ring::Transport::Ticket RingTransport::start(const void* send, std::size_t send_bytes, void* recv,
                                             std::size_t recv_bytes) {
  if (next_ - finished_ >= static_cast<Ticket>(kMaxInFlight))
    throw std::logic_error(call_ + ": more than " + std::to_string(kMaxInFlight) + " ring exchanges in flight");
  std::vector<MPI_Request>& requests = requests_[next_ % kMaxInFlight];
  requests.clear();
  // The receives are posted first so that the neighbour's sends find them waiting. Both sides cut an
  // exchange into the same pieces (its sizes are known to both), so the k-th pieces still match.
  post_pieces(static_cast<char*>(recv), recv_bytes, requests, [this](char* at, std::size_t bytes, MPI_Request* r) {
    check_mpi(MPI_Irecv(at, byte_count(bytes, call_), MPI_BYTE, left_, kRingTag, comm_, r), call_, "MPI_Irecv");
  });
  post_pieces(static_cast<char*>(const_cast<void*>(send)), send_bytes, requests,
              [this](char* at, std::size_t bytes, MPI_Request* r) {
                check_mpi(MPI_Isend(at, byte_count(bytes, call_), MPI_BYTE, right_, kRingTag, comm_, r), call_,
                          "MPI_Isend");
              });
  return next_++;
}

void RingTransport::finish(Ticket ticket) {
  if (ticket != finished_) throw std::logic_error(call_ + ": ring exchanges finished out of order");
  std::vector<MPI_Request>& requests = requests_[ticket % kMaxInFlight];
  statuses_.resize(requests.size());
  const int count = static_cast<int>(requests.size());
  // MPI_Waitall would spin inside MPI. Testing and yielding the core between tests costs nothing when
  // the core is free, and when it is not (more ranks than cores, or other work on the machine) it hands
  // the core to the neighbour this exchange is waiting for instead of spinning against it.
  int rc = MPI_SUCCESS, done = 0;
  while ((rc = MPI_Testall(count, requests.data(), &done, statuses_.data())) == MPI_SUCCESS && !done) sched_yield();
  ++finished_;
  if (rc == MPI_ERR_IN_STATUS) {
    for (const MPI_Status& s : statuses_) check_mpi(s.MPI_ERROR, call_, "MPI_Testall");
  }
  check_mpi(rc, call_, "MPI_Testall");
}

}  // namespace gradsweep::host::mpi
