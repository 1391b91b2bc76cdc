// The thread-ranks harness when ranks fail or disagree: a rank that throws, ranks that deadlock, calls
// that do not match, bad arguments. Every run must end (never hang) and say which rank and which call.
#include "support/thread_ranks.hpp"
#include "support/text_contains.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <future>

namespace gradsweep {
namespace {

using test::contains;

using test::RankFailure;
using test::run_ranks;
using test::try_ranks;

// Rank 2 throws while the others are inside (or about to enter) an allreduce: each of them gets an error
// naming rank 2 and its message, and run_ranks reports rank 2's own error.
TEST(ThreadRanksFailure, ARankThatThrowsEndsEveryRanksCollective) {
  std::vector<std::string> seen(4);
  try {
    run_ranks(4, [&](sdk::Communicator& comm) {
      if (comm.rank() == 2) throw std::runtime_error("boom in backward");
      torch::Tensor t = torch::ones({64});
      const sdk::Status s = comm.allreduce(t, sdk::ReduceOp::Sum);
      seen[static_cast<std::size_t>(comm.rank())] = s.ok ? "ok" : s.message;
      sdk::check(s);
    });
    FAIL() << "run_ranks returned";
  } catch (const RankFailure& e) {
    EXPECT_EQ(e.rank(), 2);
    EXPECT_TRUE(contains(e.what(), "rank 2 of 4 failed: boom in backward")) << e.what();
  }
  for (int r : {0, 1, 3}) {
    const std::string& s = seen[static_cast<std::size_t>(r)];
    EXPECT_TRUE(contains(s, "allreduce of 64 float32")) << s;
    EXPECT_TRUE(contains(s, "rank 2 failed: boom in backward")) << s;
  }
}

// After a failure, a rank that goes on to another call (a recv, a barrier, an async wait) gets the same
// error rather than waiting for a rank that is gone.
TEST(ThreadRanksFailure, CallsAfterAFailureEndAtOnce) {
  const test::RanksOutcome outcome = try_ranks(3, [](sdk::Communicator& comm) {
    if (comm.rank() == 1) throw std::invalid_argument("bad batch");
    torch::Tensor t = torch::ones({3});
    std::unique_ptr<sdk::Request> request;
    sdk::Status async = comm.allreduce_async(t, sdk::ReduceOp::Sum, &request);  // fails if rank 1 failed first
    if (async.ok) async = request->wait();
    EXPECT_TRUE(contains(async.message, "rank 1 failed: bad batch")) << async.message;
    const sdk::Status received = comm.recv(t, 1, 0);
    EXPECT_TRUE(contains(received.message, "rank 1 failed: bad batch")) << received.message;
    const sdk::Status barrier = comm.barrier();
    EXPECT_TRUE(contains(barrier.message, "barrier on rank " + std::to_string(comm.rank()))) << barrier.message;
  });
  ASSERT_TRUE(outcome.failure.has_value());
  EXPECT_EQ(outcome.failure->rank, 1);
  EXPECT_EQ(outcome.errors[1], "bad batch");
  EXPECT_TRUE(outcome.errors[0].empty()) << outcome.errors[0];  // rank 0 checked its errors and returned
}

// A rank that returns without joining a collective leaves the others deadlocked: the run ends at once
// (not at the timeout) with what each rank waits for.
TEST(ThreadRanksFailure, ARankThatNeverJoinsIsADeadlockNamed) {
  test::RanksOptions options;
  options.timeout = std::chrono::seconds(20);  // must not be what ends it
  try {
    run_ranks(
        3,
        [](sdk::Communicator& comm) {
          if (comm.rank() == 1) return;
          torch::Tensor t = torch::ones({5});
          if (comm.rank() == 0) sdk::collective::allreduce(comm, t);
          if (comm.rank() == 2) sdk::check(comm.recv(t, 1, 4));
        },
        options);
    FAIL() << "run_ranks returned";
  } catch (const RankFailure& e) {
    EXPECT_EQ(e.rank(), -1);
    const std::string what = e.what();
    EXPECT_TRUE(contains(what, "deadlock")) << what;
    EXPECT_TRUE(contains(what, "rank 0 waits in allreduce of 5 float32")) << what;
    EXPECT_TRUE(contains(what, "rank 1 has returned")) << what;
    EXPECT_TRUE(contains(what, "rank 2 waits in recv of 5 float32 (20 bytes) from rank 1 tag 4")) << what;
  }
}

// Collectives issued in a different order on different ranks: every rank gets an error naming each
// rank's call (MPI would hang or misread).
TEST(ThreadRanksFailure, CallsThatDoNotMatchAreNamed) {
  const test::RanksOutcome outcome = try_ranks(2, [](sdk::Communicator& comm) {
    torch::Tensor t = torch::ones({8});
    if (comm.rank() == 0)
      sdk::collective::allreduce(comm, t);
    else
      sdk::collective::broadcast(comm, t, 0);
  });
  ASSERT_TRUE(outcome.failure.has_value());
  for (const std::string& e : outcome.errors) {
    EXPECT_TRUE(contains(e, "do not match: rank 0 called allreduce of 8 float32 (32 bytes), native, sum")) << e;
    EXPECT_TRUE(contains(e, "rank 1 called broadcast of 8 float32 (32 bytes), root 0")) << e;
  }
}

TEST(ThreadRanksFailure, AsyncCallsNeverJoinedByAllAreReported) {
  try {
    run_ranks(2, [](sdk::Communicator& comm) {
      torch::Tensor t = torch::ones({4});
      if (comm.rank() == 0) sdk::collective::allreduce_async(comm, t);  // the request is dropped unwaited
    });
    FAIL() << "run_ranks returned";
  } catch (const RankFailure& e) {
    EXPECT_EQ(e.rank(), -1);
    EXPECT_TRUE(contains(e.what(),
                         "async call #0 (allreduce_async of 4 float32 (16 bytes)) joined by rank(s) 0, "
                         "never by rank(s) 1"))
        << e.what();
  }
}

// The safety net: a rank busy outside the communicator for longer than the timeout ends the wait of
// the others with what each rank was doing.
TEST(ThreadRanksFailure, AWaitPastTheTimeoutEndsTheRun) {
  test::RanksOptions options;
  options.timeout = std::chrono::milliseconds(200);
  std::promise<void> rank0_done;
  std::shared_future<void> released = rank0_done.get_future().share();
  try {
    run_ranks(
        2,
        [&](sdk::Communicator& comm) {
          torch::Tensor t = torch::ones({2});
          if (comm.rank() == 1) {
            released.wait();  // busy elsewhere until rank 0 has given up
            sdk::collective::barrier(comm);
            return;
          }
          const sdk::Status s = comm.allreduce(t, sdk::ReduceOp::Sum);
          rank0_done.set_value();
          sdk::check(s);
        },
        options);
    FAIL() << "run_ranks returned";
  } catch (const RankFailure& e) {
    EXPECT_EQ(e.rank(), -1);
    EXPECT_TRUE(contains(e.what(), "rank 0 waited 0.200 s in one call")) << e.what();
    EXPECT_TRUE(contains(e.what(), "rank 1 is running (in no communicator call)")) << e.what();
  }
}

// Bad arguments fail on the calling rank before it joins anything, in the MPI backend's words.
TEST(ThreadRanksFailure, BadArgumentsAreRefusedWithTheMpiBackendsMessages) {
  run_ranks(2, [](sdk::Communicator& comm) {
    torch::Tensor t = torch::ones({4, 4});
    torch::Tensor strided = t.t();
    EXPECT_TRUE(
        contains(comm.allreduce(strided, sdk::ReduceOp::Sum).message, "allreduce: the tensor is not contiguous"));
    torch::Tensor out = torch::zeros({7});
    EXPECT_TRUE(contains(comm.allgather(t, out).message, "expected size() x input = 2 x 16"));
    torch::Tensor one = torch::zeros({1});
    EXPECT_TRUE(contains(comm.broadcast(one, 2).message, "broadcast: root rank 2 out of range (2 ranks)"));
    EXPECT_TRUE(contains(comm.send(one, comm.rank(), 0).message, "is this rank itself"));
    EXPECT_TRUE(contains(comm.send(one, 1 - comm.rank(), -1).message, "tag -1 out of range"));
    torch::Tensor bools = torch::zeros({2}, torch::kBool);
    EXPECT_TRUE(contains(comm.allreduce(bools, sdk::ReduceOp::Max).message, "has dtype Bool"));
    std::unique_ptr<sdk::Request>* no_request = nullptr;
    EXPECT_TRUE(contains(comm.allreduce_async(one, sdk::ReduceOp::Sum, no_request).message, "request is null"));
    sdk::collective::barrier(comm);  // both ranks are still in step: nothing above joined a collective
  });
}

// A message of another length than the receiving tensor is consumed and reported with both lengths.
TEST(ThreadRanksFailure, AMessageOfAnotherLengthIsAnError) {
  run_ranks(2, [](sdk::Communicator& comm) {
    if (comm.rank() == 0) {
      sdk::check(comm.send(torch::ones({5}), 1, 9));
      return;
    }
    torch::Tensor t = torch::zeros({4});
    int source = -1;
    const sdk::Status s = comm.recv_any(t, 9, &source);
    EXPECT_EQ(s.message, "recv_any: rank 0 sent 5 elements, 4 expected (tag 9)");
  });
}

}  // namespace
}  // namespace gradsweep
