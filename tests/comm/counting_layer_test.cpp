// The counting layer (comm/layers/counting_communicator.hpp) over a transport that runs its async allreduce on a
// thread of its own, as the MPI backend runs them on its worker: the busy time is the time the work ran
// when the transport tells the layers (comm/core/async_progress.hpp), a wait after the work ended is not
// blocked, operations queued behind each other are not counted twice, and without the transport's word
// the wait's time is what counts.
#include "comm/core/async_progress.hpp"
#include "comm/layers/communicator_layer.hpp"
#include "comm/layers/communicator_stack.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <future>
#include <thread>
#include <vector>

namespace gradsweep {
namespace {

using namespace std::chrono_literals;

// Joins its worker when waited for or destroyed.
class ThreadRequest final : public sdk::Request {
 public:
  explicit ThreadRequest(std::thread worker) : worker_(std::move(worker)) {}
  ~ThreadRequest() override { wait(); }
  sdk::Status wait() noexcept override {
    if (worker_.joinable()) worker_.join();
    return sdk::Status::Ok();
  }

 private:
  std::thread worker_;
};

// One rank (the local backend underneath) whose allreduce_async sleeps `run_for` on a thread, after the
// previous one has ended (a serial worker); it tells the layers when it runs if `tells`.
class WorkerTransport final : public comm::CommunicatorLayer {
 public:
  WorkerTransport(bool tells, std::chrono::milliseconds run_for)
      : CommunicatorLayer(comm::make_local_communicator()), tells_(tells), run_for_(run_for) {}
  sdk::Status allreduce_async(torch::Tensor&, sdk::ReduceOp, std::unique_ptr<sdk::Request>* request) noexcept override {
    const comm::AsyncProgress progress = tells_ ? comm::AsyncProgress::claim() : comm::AsyncProgress();
    std::shared_future<void> before = previous_;
    auto ended = std::make_shared<std::promise<void>>();
    previous_ = ended->get_future().share();
    *request = std::make_unique<ThreadRequest>(std::thread([progress, before, ended, run_for = run_for_] {
      if (before.valid()) before.wait();
      progress.started();
      std::this_thread::sleep_for(run_for);
      progress.finished(true);
      ended->set_value();
    }));
    return sdk::Status::Ok();
  }
  // Ready when every operation issued so far has ended.
  std::shared_future<void> last() const { return previous_; }

 protected:
  std::unique_ptr<CommunicatorLayer> over_view(sdk::Communicator&, sdk::Algorithm) override { return nullptr; }
  std::unique_ptr<CommunicatorLayer> over_group(std::unique_ptr<comm::HostCommunicator>) override { return nullptr; }

 private:
  const bool tells_;
  const std::chrono::milliseconds run_for_;
  std::shared_future<void> previous_;
};

struct Stack {
  WorkerTransport* transport;
  std::unique_ptr<comm::HostCommunicator> comm;
};

Stack stack_over(bool tells, std::chrono::milliseconds run_for) {
  auto transport = std::make_unique<WorkerTransport>(tells, run_for);
  WorkerTransport* raw = transport.get();
  return {raw, comm::wrap_communicator(std::move(transport))};
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The work ran 150 ms and ended before the caller waited: busy covers the work, blocked only the issue.
TEST(CountingLayer, AsyncBusyTimeIsTheWorkersAndAWaitAfterItsEndIsNotBlocked) {
  Stack s = stack_over(true, 150ms);
  torch::Tensor t = torch::ones({256});
  std::unique_ptr<sdk::Request> request;
  ASSERT_TRUE(s.comm->allreduce_async(t, sdk::ReduceOp::Sum, &request).ok);
  s.transport->last().wait();  // the caller computes until the work has ended
  ASSERT_TRUE(request->wait().ok);
  const comm::CommStats c = s.comm->take_stats();
  EXPECT_EQ(c.calls, 1u);
  EXPECT_EQ(c.payload_bytes, 1024u);
  EXPECT_GE(c.seconds, 0.15);
  EXPECT_LT(c.blocked_seconds, 0.05) << "the wait began after the work ended";
}

// Three operations issued at once run one after the other: their busy time is the span they occupied the
// worker, never more than the wall time from the first issue to the last end (counted from each issue,
// the queueing would count 1 + 2 + 3 x 100 ms).
TEST(CountingLayer, QueuedOperationsAreNotCountedTwice) {
  Stack s = stack_over(true, 100ms);
  torch::Tensor t = torch::ones({16});
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<sdk::Request>> requests(3);
  for (auto& r : requests) ASSERT_TRUE(s.comm->allreduce_async(t, sdk::ReduceOp::Sum, &r).ok);
  for (auto& r : requests) ASSERT_TRUE(r->wait().ok);
  const double wall = seconds_since(t0);
  const comm::CommStats c = s.comm->take_stats();
  EXPECT_EQ(c.calls, 3u);
  EXPECT_GE(c.seconds, 0.3);
  EXPECT_LE(c.seconds, wall + 1e-3) << "busy " << c.seconds << " s in " << wall << " s of wall time";
  EXPECT_LE(c.blocked_seconds, c.seconds);
}

// A transport that says nothing of its worker: the layer knows only the caller's time, so the wait counts
// as busy and blocked, and a destroyed request's wait as well.
TEST(CountingLayer, WithoutTheTransportsWordTheWaitIsBusyAndBlocked) {
  Stack s = stack_over(false, 150ms);
  torch::Tensor t = torch::ones({256});
  std::unique_ptr<sdk::Request> request;
  ASSERT_TRUE(s.comm->allreduce_async(t, sdk::ReduceOp::Sum, &request).ok);
  ASSERT_TRUE(request->wait().ok);
  comm::CommStats c = s.comm->take_stats();
  EXPECT_EQ(c.calls, 1u);
  EXPECT_GE(c.blocked_seconds, 0.1) << "the caller waited for the work";
  EXPECT_DOUBLE_EQ(c.seconds, c.blocked_seconds);

  ASSERT_TRUE(s.comm->allreduce_async(t, sdk::ReduceOp::Sum, &request).ok);
  request.reset();  // completes it
  c = s.comm->take_stats();
  EXPECT_EQ(c.calls, 1u);
  EXPECT_GE(c.blocked_seconds, 0.1) << "destroying the request waited for the work";
  EXPECT_DOUBLE_EQ(c.seconds, c.blocked_seconds);
}

}  // namespace
}  // namespace gradsweep
