#include "comm/layers/counting_communicator.hpp"

#include "comm/core/async_progress.hpp"

#include <algorithm>
#include <mutex>

namespace gradsweep::comm {
namespace {

using Clock = CountingCommunicator::Clock;

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::max(0.0, std::chrono::duration<double>(to - from).count());
}

std::uint64_t bytes_of(const torch::Tensor& t) {
  return t.defined() ? static_cast<std::uint64_t>(t.numel()) * static_cast<std::uint64_t>(t.element_size()) : 0;
}

CommStats call_stats(double seconds, const Traffic* moved) {
  CommStats delta;
  delta.calls = 1;
  delta.seconds = delta.blocked_seconds = seconds;
  if (moved != nullptr) {
    delta.bytes_sent = moved->sent;
    delta.bytes_received = moved->received;
    delta.payload_bytes = moved->payload;
  }
  return delta;
}

}  // namespace

struct CountingCommunicator::AsyncClock {
  explicit AsyncClock(std::shared_ptr<CommLedger> l) : ledger(std::move(l)) {}
  const std::shared_ptr<CommLedger> ledger;
  std::mutex mutex;
  Clock::time_point last_finished{};  // guarded by mutex
};

namespace {

// One async call as the backend's worker runs it: its busy time when it ends, and that end, for the wait.
class CountedProgress final : public AsyncProgress::Listener {
 public:
  CountedProgress(std::shared_ptr<CountingCommunicator::AsyncClock> clock, Clock::time_point issued)
      : clock_(std::move(clock)), issued_(issued) {}
  void started() override {}
  void finished(bool /*ok*/) override {
    const Clock::time_point now = Clock::now();
    CommStats delta;
    {
      const std::lock_guard<std::mutex> lock(clock_->mutex);
      delta.seconds = seconds_between(std::max(issued_, clock_->last_finished), now);
      clock_->last_finished = now;
      finished_ = now;
    }
    try {
      clock_->ledger->add(delta);
    } catch (...) {  // on the backend's worker: a figure lost to a failed allocation must not fail the call
    }
  }
  // When the call ended; Clock::time_point::max() until it has.
  Clock::time_point finished_at() const {
    const std::lock_guard<std::mutex> lock(clock_->mutex);
    return finished_;
  }

 private:
  std::shared_ptr<CountingCommunicator::AsyncClock> clock_;
  const Clock::time_point issued_;
  Clock::time_point finished_ = Clock::time_point::max();  // guarded by clock_->mutex
};

// The request of an async call: a caller's time in wait() or the destructor (which completes the call) is
// blocked up to the call's end, and also busy when the backend reported no progress.
class CountedRequest final : public sdk::Request {
 public:
  CountedRequest(std::unique_ptr<sdk::Request> inner, std::shared_ptr<CountingCommunicator::AsyncClock> clock,
                 std::shared_ptr<CountedProgress> progress)
      : inner_(std::move(inner)), clock_(std::move(clock)), progress_(std::move(progress)) {}
  ~CountedRequest() override {
    if (!inner_) return;
    const Clock::time_point t0 = Clock::now();
    inner_.reset();
    count_wait(t0);
  }
  CountedRequest(const CountedRequest&) = delete;
  CountedRequest& operator=(const CountedRequest&) = delete;
  sdk::Status wait() noexcept override {
    if (!inner_) return result_;
    const Clock::time_point t0 = Clock::now();
    result_ = inner_->wait();
    inner_.reset();
    count_wait(t0);
    return result_;
  }

 private:
  void count_wait(Clock::time_point t0) noexcept {
    // The moment this thread runs again after the call ended is not communication (and counting it could
    // make blocked exceed busy for tiny calls).
    const Clock::time_point end = progress_ ? std::min(Clock::now(), progress_->finished_at()) : Clock::now();
    CommStats delta;
    delta.blocked_seconds = seconds_between(t0, end);
    if (!progress_) delta.seconds = delta.blocked_seconds;
    try {
      clock_->ledger->add(delta);
    } catch (...) {  // called from a destructor: a figure lost to a failed allocation, not the process
    }
  }

  std::unique_ptr<sdk::Request> inner_;
  std::shared_ptr<CountingCommunicator::AsyncClock> clock_;
  std::shared_ptr<CountedProgress> progress_;  // null: the backend reported no progress
  sdk::Status result_;
};

}  // namespace

CountingCommunicator::CountingCommunicator(std::unique_ptr<HostCommunicator> next)
    : CommunicatorLayer(std::move(next)), clock_(std::make_shared<AsyncClock>(ledger())) {}

CountingCommunicator::CountingCommunicator(sdk::Communicator& view, sdk::Algorithm algorithm,
                                           CountingCommunicator& owner)
    : CommunicatorLayer(view, algorithm, owner), clock_(owner.clock_) {}

template <class Body>
sdk::Status CountingCommunicator::counted(const Traffic& moved, Body&& body) noexcept {
  if (!parent_status().ok) return body();  // a group whose parent is gone: refused below, nothing to count
  const Clock::time_point t0 = Clock::now();
  const sdk::Status status = body();
  count(call_stats(seconds_between(t0, Clock::now()), status.ok ? &moved : nullptr));
  return status;
}

template <class Body>
sdk::Status CountingCommunicator::counted_async(const Traffic& moved, std::unique_ptr<sdk::Request>* request,
                                                Body&& body) noexcept {
  if (!parent_status().ok) return body();
  const Clock::time_point t0 = Clock::now();
  std::shared_ptr<CountedProgress> progress;
  if (sdk::Status s = sdk::guard([&] { progress = std::make_shared<CountedProgress>(clock_, t0); }); !s.ok) return s;
  sdk::Status status;
  bool claimed = false;
  {
    // A backend that queues the call tells the listener when its worker has run it (comm/core/async_progress.hpp).
    const AsyncProgress::Issuing issuing(progress);
    status = body();
    claimed = issuing.claimed();
  }
  count(call_stats(seconds_between(t0, Clock::now()), status.ok ? &moved : nullptr));
  if (!status.ok || request == nullptr || !*request) return status;
  return sdk::guard(
      [&] { *request = std::make_unique<CountedRequest>(std::move(*request), clock_, claimed ? progress : nullptr); });
}

void CountingCommunicator::count(const CommStats& delta) noexcept {
  try {
    add_stats(delta);
  } catch (...) {  // a figure lost to a failed allocation must not fail the call that moved the data
  }
}

sdk::Status CountingCommunicator::allreduce(torch::Tensor& tensor, sdk::ReduceOp op) noexcept {
  return counted(allreduce_traffic(bytes_of(tensor), size()), [&] { return next().allreduce(tensor, op); });
}
sdk::Status CountingCommunicator::broadcast(torch::Tensor& tensor, int root) noexcept {
  return counted(broadcast_traffic(bytes_of(tensor), size(), rank(), root),
                 [&] { return next().broadcast(tensor, root); });
}
sdk::Status CountingCommunicator::allgather(const torch::Tensor& input, torch::Tensor& output) noexcept {
  return counted(scatter_gather_traffic(bytes_of(output), size()), [&] { return next().allgather(input, output); });
}
sdk::Status CountingCommunicator::reduce_scatter(const torch::Tensor& input, torch::Tensor& output,
                                                 sdk::ReduceOp op) noexcept {
  return counted(scatter_gather_traffic(bytes_of(input), size()),
                 [&] { return next().reduce_scatter(input, output, op); });
}
sdk::Status CountingCommunicator::send(const torch::Tensor& tensor, int dst, int tag) noexcept {
  const std::uint64_t b = bytes_of(tensor);
  return counted(Traffic{b, 0, b}, [&] { return next().send(tensor, dst, tag); });
}
sdk::Status CountingCommunicator::recv(torch::Tensor& tensor, int src, int tag) noexcept {
  const std::uint64_t b = bytes_of(tensor);
  return counted(Traffic{0, b, b}, [&] { return next().recv(tensor, src, tag); });
}
sdk::Status CountingCommunicator::recv_any(torch::Tensor& tensor, int tag, int* source) noexcept {
  const std::uint64_t b = bytes_of(tensor);
  return counted(Traffic{0, b, b}, [&] { return next().recv_any(tensor, tag, source); });
}
sdk::Status CountingCommunicator::barrier() noexcept {
  return counted(Traffic{}, [&] { return next().barrier(); });
}
sdk::Status CountingCommunicator::allreduce_async(torch::Tensor& tensor, sdk::ReduceOp op,
                                                  std::unique_ptr<sdk::Request>* request) noexcept {
  return counted_async(allreduce_traffic(bytes_of(tensor), size()), request,
                       [&] { return next().allreduce_async(tensor, op, request); });
}
sdk::Status CountingCommunicator::reduce_scatter_async(const torch::Tensor& input, torch::Tensor& output,
                                                       sdk::ReduceOp op,
                                                       std::unique_ptr<sdk::Request>* request) noexcept {
  return counted_async(scatter_gather_traffic(bytes_of(input), size()), request,
                       [&] { return next().reduce_scatter_async(input, output, op, request); });
}
sdk::Status CountingCommunicator::allgather_async(const torch::Tensor& input, torch::Tensor& output,
                                                  std::unique_ptr<sdk::Request>* request) noexcept {
  return counted_async(scatter_gather_traffic(bytes_of(output), size()), request,
                       [&] { return next().allgather_async(input, output, request); });
}

}  // namespace gradsweep::comm
