#pragma once
// The counting layer of the communicator stack (comm/layers/communicator_stack.hpp), right above the backend: what
// each call moved and how long it took, counted one way whatever backend moved the data, into the
// communicator's ledger (comm/core/comm_ledger.hpp: take_stats(), per step in metrics.jsonl). The rules
// (docs/communicators.md#what-is-counted):
//   - every call reaching the backend counts once; bytes and the size S only when it succeeds, as the
//     bandwidth-optimal ring would move them (comm/core/byte_counting.hpp), on every backend and algorithm;
//   - a blocking call's wall time is busy and blocked;
//   - an async call's issue time is busy and blocked. While the backend runs it, the time counts as busy: from
//     issue, or from the end of the previous async call of this communicator if that is later, to its end, as
//     the backend's worker reports it (comm/core/async_progress.hpp), so queueing counts and back-to-back calls leave
//     no gap. A caller's time in its request's wait (or destructor) is blocked up to the call's end. On a
//     backend that reports no progress, the wait's time is busy and blocked.
// Below the recorder layer, so that the fingerprint and member exchanges it makes (uncounted) and the
// watchdog's and recorder's own time are not a strategy's communication. Calls the argument-check layer
// refuses never reach it and count nothing.
#include "comm/core/byte_counting.hpp"
#include "comm/layers/communicator_layer.hpp"

#include <chrono>
#include <memory>

namespace gradsweep::comm {

class CountingCommunicator final : public CommunicatorLayer {
 public:
  using Clock = std::chrono::steady_clock;

  explicit CountingCommunicator(std::unique_ptr<HostCommunicator> next);
  CountingCommunicator(sdk::Communicator& view, sdk::Algorithm algorithm, CountingCommunicator& owner);

  sdk::Status allreduce(torch::Tensor& tensor, sdk::ReduceOp op) noexcept override;
  sdk::Status broadcast(torch::Tensor& tensor, int root) noexcept override;
  sdk::Status allgather(const torch::Tensor& input, torch::Tensor& output) noexcept override;
  sdk::Status reduce_scatter(const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op) noexcept override;
  sdk::Status send(const torch::Tensor& tensor, int dst, int tag) noexcept override;
  sdk::Status recv(torch::Tensor& tensor, int src, int tag) noexcept override;
  sdk::Status recv_any(torch::Tensor& tensor, int tag, int* source) noexcept override;
  sdk::Status barrier() noexcept override;
  sdk::Status allreduce_async(torch::Tensor& tensor, sdk::ReduceOp op,
                              std::unique_ptr<sdk::Request>* request) noexcept override;
  sdk::Status reduce_scatter_async(const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op,
                                   std::unique_ptr<sdk::Request>* request) noexcept override;
  sdk::Status allgather_async(const torch::Tensor& input, torch::Tensor& output,
                              std::unique_ptr<sdk::Request>* request) noexcept override;

  // One communicator's async timing, shared with its views (their async calls run on the same worker) and
  // with the calls still running (they may end after this layer is gone).
  struct AsyncClock;

 protected:
  std::unique_ptr<CommunicatorLayer> over_view(sdk::Communicator& view, sdk::Algorithm algorithm) override {
    return std::make_unique<CountingCommunicator>(view, algorithm, *this);
  }
  std::unique_ptr<CommunicatorLayer> over_group(std::unique_ptr<HostCommunicator> group) override {
    return std::make_unique<CountingCommunicator>(std::move(group));
  }

 private:
  // Runs `body` (the next layer's call) and counts it; `moved` is what it moved if it succeeds.
  template <class Body>
  sdk::Status counted(const Traffic& moved, Body&& body) noexcept;
  template <class Body>
  sdk::Status counted_async(const Traffic& moved, std::unique_ptr<sdk::Request>* request, Body&& body) noexcept;
  // Into the ledger; a failure to count does not fail the call.
  void count(const CommStats& delta) noexcept;

  std::shared_ptr<AsyncClock> clock_;
};

}  // namespace gradsweep::comm
