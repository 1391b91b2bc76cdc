// The NCCL backend's flight recorder and verdicts (comm/nccl/nccl_builtin_layers.hpp), in process and without a GPU:
// two NcclForensics play two ranks sharing a cell directory, with the watchdog and the exchange of dumps
// the MPI backend uses. What needs the GPU (the events, ncclCommGetAsyncError) is scripts/gpu/nccl_check.
#include "comm/nccl/nccl_builtin_layers.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace gradsweep::comm {
namespace {

namespace fs = std::filesystem;

CallShape allreduce_of(std::int64_t n) {
  return call_shape(CommOp::Allreduce, torch::zeros({n}, torch::kFloat), 0 /* sum */);
}

RankProgress in(int rank, std::uint64_t seq) {
  RankProgress p;
  p.rank = rank;
  p.answered = true;
  p.issued = seq;
  p.finished = seq - 1;
  p.waiting_seq = seq;
  p.waiting_in = "allreduce of 8 float32 (32 B)";
  return p;
}

nlohmann::json verdict_in(const fs::path& cell) {
  return nlohmann::json::parse(test::read_text(cell / "flight-recorder" / "verdict.json"));
}

// A rank whose end of the job is recorded instead of ending the test.
struct Ended {
  std::mutex mutex;
  std::condition_variable cv;
  std::string what;
  double limit = 0;
  NcclForensics::EndJob hook() {
    return [this](const std::string& w, double, double l) {
      const std::lock_guard<std::mutex> lock(mutex);
      what = w;
      limit = l;
      cv.notify_all();
    };
  }
  bool wait(std::chrono::seconds within) {
    std::unique_lock<std::mutex> lock(mutex);
    return cv.wait_for(lock, within, [&] { return !what.empty(); });
  }
};

TEST(NcclForensics, CallsAreNamedWithTheirNumber) {
  CallShape async = call_shape(CommOp::AllreduceAsync, torch::zeros({1024}, torch::kFloat), 0);
  EXPECT_EQ(numbered(async, 12), "allreduce_async of 1024 float32 (4.0 KiB) #12");
  CallShape send = call_shape(CommOp::Send, torch::zeros({4}, torch::kFloat), -1, 1);
  EXPECT_EQ(numbered(send, 3), "send of 4 float32 (16 B) to rank 1 (point-to-point #3)");
  EXPECT_EQ(send.peer, 1);
  EXPECT_EQ(send.bytes, 16u);
  CallShape barrier;
  EXPECT_EQ(numbered(barrier, 7), "barrier #7");
}

TEST(NcclForensics, FailureBlamesThisRankWhenEveryRankIsInTheCollective) {
  const HangVerdict v = judge_failure({in(0, 5), in(1, 5)}, 1, "allreduce #5", "NCCL failed on rank 1");
  EXPECT_EQ(v.summary, "rank 1 failed in allreduce #5");
  EXPECT_EQ(v.message.rfind("NCCL failed on rank 1; ", 0), 0u) << v.message;
  EXPECT_NE(v.message.find("ranks 0,1 finished #4 and wait in allreduce of 8 float32 (32 B) #5"), std::string::npos)
      << v.message;
}

TEST(NcclForensics, FailureBlamesARankThatDidNotAnswerOrIsBehind) {
  RankProgress dead;
  dead.rank = 1;
  EXPECT_EQ(judge_failure({in(0, 5), dead}, 0, "allreduce #5", "remote process exited").summary,
            "rank 1 did not finish allreduce #5");
  EXPECT_EQ(judge_failure({in(0, 5), in(1, 4), in(2, 5)}, 0, "allreduce #5", "remote process exited").summary,
            "rank 1 did not finish allreduce #4");
}

// Rank 0 waits in allreduce #2; rank 1 finished #1 and never issues #2. Rank 0's watchdog fires, rank 1's
// answers the request for dumps, and the verdict names rank 1. Rank 0's async call #1 completed on the
// "GPU" but was never waited for: the refresh before the dump must mark it done, or the verdict would say
// rank 0 waits in #1.
TEST(NcclForensics, WatchdogJudgesTheHangFromBothRanksDumps) {
  const fs::path cell = test::scratch_dir("nccl-hang");
  forensics::set_directory(cell, 0);
  std::atomic<std::uint64_t> completed_async{0};
  Ended ended;
  std::atomic<NcclForensics*> rank0_ptr{nullptr};  // the refresh runs on rank 0's watchdog thread
  NcclForensics rank1(
      30.0, 3.0, [](const std::string&, double, double) {}, nullptr);
  rank1.set_rank(1, 2);
  rank1.recorder().finish(rank1.issue(allreduce_of(4), true), true);
  NcclForensics rank0(0.5, 3.0, ended.hook(), [&] {
    if (const std::uint64_t id = completed_async.exchange(0); id != 0) rank0_ptr.load()->recorder().finish(id, true);
  });
  rank0_ptr = &rank0;
  rank0.set_rank(0, 2);
  completed_async = rank0.issue(call_shape(CommOp::AllreduceAsync, torch::zeros({4}, torch::kFloat), 0), true);
  std::thread waiting([&] {
    const auto recorded = rank0.record(allreduce_of(8), [](std::uint64_t seq) { EXPECT_EQ(seq, 2u); });
    const CollectiveTimeout::Scope watch(rank0.timeout(), "allreduce of 8 float32 (32 B) #2 on rank 0 of 2");
    ended.wait(std::chrono::seconds(20));
  });
  const bool fired = ended.wait(std::chrono::seconds(20));
  waiting.join();
  forensics::set_directory({}, 0);
  ASSERT_TRUE(fired);
  EXPECT_EQ(ended.what, "allreduce of 8 float32 (32 B) #2 on rank 0 of 2");
  EXPECT_DOUBLE_EQ(ended.limit, 0.5);
  const nlohmann::json v = verdict_in(cell);
  EXPECT_EQ(v["kind"], "hang");
  EXPECT_EQ(v["summary"], "rank 1 did not finish allreduce #2") << v.dump();
  const nlohmann::json dump0 = nlohmann::json::parse(test::read_text(cell / "flight-recorder" / "rank-0.json"));
  EXPECT_EQ(dump0["backend"], "nccl");
  EXPECT_EQ(dump0["waiting_in"]["seq"], 2);
  EXPECT_EQ(dump0["entries"][0]["state"], "done");
  EXPECT_TRUE(fs::exists(cell / "flight-recorder" / "rank-1.json"));
}

// A collective fails on rank 0 while rank 1 waits in it with rank 0: rank 0 is named, with its error.
TEST(NcclForensics, FailureWritesAnErrorVerdictNamingRankAndCollective) {
  const fs::path cell = test::scratch_dir("nccl-error");
  forensics::set_directory(cell, 0);
  NcclForensics rank1(
      30.0, 3.0, [](const std::string&, double, double) {}, nullptr);
  rank1.set_rank(1, 2);
  rank1.recorder().finish(rank1.issue(allreduce_of(4), true), true);
  rank1.issue(allreduce_of(8), true);
  NcclForensics rank0(
      30.0, 3.0, [](const std::string&, double, double) {}, nullptr);
  rank0.set_rank(0, 2);
  rank0.recorder().finish(rank0.issue(allreduce_of(4), true), true);
  rank0.issue(allreduce_of(8), true);
  const std::string error =
      "allreduce of 8 float32 (32 B) #2 on rank 0 of 2: NCCL (asynchronous) failed: unhandled cuda error";
  const std::string message = rank0.on_failure(error);
  forensics::set_directory({}, 0);
  const nlohmann::json v = verdict_in(cell);
  EXPECT_EQ(v["kind"], "error");
  EXPECT_EQ(v["summary"], "rank 0 failed in allreduce #2") << v.dump();
  EXPECT_EQ(v["message"], message);
  EXPECT_EQ(message.rfind(error, 0), 0u) << message;
  const nlohmann::json dump0 = nlohmann::json::parse(test::read_text(cell / "flight-recorder" / "rank-0.json"));
  EXPECT_EQ(dump0["waiting_in"]["seq"], 2);  // dumped while the failed call was still open
  EXPECT_EQ(dump0["reason"], "this rank failed: " + error);
}

// NCCL's "remote process exited" on rank 0 because rank 1 died: rank 1, which cannot answer, is named.
TEST(NcclForensics, FailureCausedByADeadPeerNamesThePeer) {
  const fs::path cell = test::scratch_dir("nccl-dead-peer");
  forensics::set_directory(cell, 0);
  NcclForensics rank0(
      0.0, 0.5, [](const std::string&, double, double) {}, nullptr);
  rank0.set_rank(0, 2);
  rank0.issue(call_shape(CommOp::AllreduceAsync, torch::zeros({4}, torch::kFloat), 0), true);
  rank0.on_failure(
      "allreduce_async of 4 float32 (16 B) #1 on rank 0 of 2: NCCL (asynchronous) failed: remote process "
      "exited or there was a network error");
  forensics::set_directory({}, 0);
  const nlohmann::json v = verdict_in(cell);
  EXPECT_EQ(v["kind"], "error");
  EXPECT_EQ(v["summary"], "rank 1 did not finish allreduce_async #1") << v.dump();
  EXPECT_NE(v["message"].get<std::string>().find("rank 1 did not answer"), std::string::npos) << v.dump();
}

// Without a cell directory (before `gradsweep train` set one) a failure writes nothing and says nothing more.
TEST(NcclForensics, FailureWithoutDirectoryWritesNothing) {
  forensics::set_directory({}, 0);
  NcclForensics rank0(
      0.0, 0.5, [](const std::string&, double, double) {}, nullptr);
  rank0.issue(allreduce_of(4), true);
  EXPECT_EQ(rank0.on_failure("broken"), "");
}

}  // namespace
}  // namespace gradsweep::comm
