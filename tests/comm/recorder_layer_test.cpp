// The recording layer of the communicator stack (comm/layers/recorder_communicator.hpp) over the thread-ranks
// backend and the local one: every call in the flight recorder whatever the backend, runtime.check_collectives'
// fingerprints that stop mismatched calls without counting their own bytes, and a hung collective named by
// the rank that did not reach it, from the ranks' dumps (the watchdog layer asks the recorder's forensics).
#include "comm/registry/backend_registry.hpp"
#include "comm/forensics/collective_forensics.hpp"
#include "comm/forensics/flight_recorder.hpp"
#include "support/test_files.hpp"
#include "support/thread_ranks.hpp"
#include "support/text_contains.hpp"
#include "comm/hang_reports.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

namespace gradsweep {
namespace {

using test::contains;
using test::run_ranks;

// Dumps and verdicts go to `dir` for the test's length; nothing is written once it ends.
struct DumpDirectory {
  explicit DumpDirectory(const std::filesystem::path& dir) { comm::forensics::set_directory(dir, 0); }
  ~DumpDirectory() { comm::forensics::set_directory({}, 0); }
};

struct CheckCollectives {
  CheckCollectives() { comm::forensics::set_configured_check(true); }
  ~CheckCollectives() { comm::forensics::set_configured_check(false); }
};

TEST(RecorderLayer, RecordsEveryCallOfTheThreadRanksBackend) {
  run_ranks(2, [](comm::HostCommunicator& comm) {
    torch::Tensor t = torch::ones({4});
    sdk::collective::barrier(comm);
    sdk::collective::allreduce(comm, t);
    sdk::collective::allreduce(sdk::collective::with_algorithm(comm, sdk::Algorithm::Ring), t);
    std::unique_ptr<sdk::Request> request = sdk::collective::allreduce_async(comm, t);
    sdk::collective::wait(request);
    if (comm.rank() == 0) sdk::collective::send(comm, t, 1, 5);
    if (comm.rank() == 1) sdk::collective::recv(comm, t, 0, 5);

    const comm::FlightRecorder* recorder = comm.flight_recorder();
    ASSERT_NE(recorder, nullptr) << "the stack records the thread-ranks backend's calls";
    const std::vector<comm::FlightEntry> entries = recorder->entries();
    ASSERT_EQ(entries.size(), 5u);
    EXPECT_EQ(entries[0].shape.op, comm::CommOp::Barrier);
    EXPECT_EQ(entries[1].shape.op, comm::CommOp::Allreduce);
    EXPECT_EQ(entries[1].seq, 2u);
    EXPECT_FALSE(entries[1].shape.ring);
    EXPECT_EQ(entries[2].shape.op, comm::CommOp::Allreduce);
    EXPECT_TRUE(entries[2].shape.ring) << "a view's call is recorded as the ring's";
    EXPECT_EQ(entries[2].seq, 3u) << "views share their communicator's sequence";
    EXPECT_EQ(entries[3].shape.op, comm::CommOp::AllreduceAsync);
    EXPECT_EQ(entries[3].seq, 4u);
    EXPECT_EQ(entries[4].shape.op, comm.rank() == 0 ? comm::CommOp::Send : comm::CommOp::Recv);
    EXPECT_EQ(entries[4].seq, 1u) << "point-to-point has a sequence of its own";
    EXPECT_EQ(entries[4].shape.peer, 1 - comm.rank());
    EXPECT_EQ(entries[4].shape.tag, 5);
    for (const comm::FlightEntry& e : entries) EXPECT_EQ(e.state, comm::CallState::Done) << comm::describe(e.shape);
    EXPECT_EQ(recorder->last_collective_finished(), 4u);
  });
}

// A call the backend fails is recorded as failed; one the argument layer refuses is not recorded at all.
TEST(RecorderLayer, RecordsFailuresAndNotRefusedCalls) {
  auto comm = comm::make_communicator("local");
  torch::Tensor t = torch::ones({3});
  EXPECT_FALSE(comm->recv(t, 0, 0).ok);  // refused above the recorder: this rank itself
  sdk::collective::allreduce(*comm, t);
  const std::vector<comm::FlightEntry> entries = comm->flight_recorder()->entries();
  ASSERT_EQ(entries.size(), 1u) << "the local backend's calls are recorded too";
  EXPECT_EQ(entries[0].shape.op, comm::CommOp::Allreduce);
  EXPECT_EQ(entries[0].state, comm::CallState::Done);
}

// With runtime.check_collectives the ranks compare what they issue: a different element count fails every
// rank naming both sides, and a matching call moves the bytes it would move without the check.
TEST(RecorderLayer, FingerprintsStopMismatchedCollectivesUncounted) {
  const CheckCollectives on;
  std::vector<comm::CommStats> counted(2);
  run_ranks(2, [&](comm::HostCommunicator& comm) {
    torch::Tensor t = torch::ones({4});
    sdk::collective::allreduce(comm, t);
    counted[static_cast<std::size_t>(comm.rank())] = comm.take_stats();
    torch::Tensor odd = torch::ones({comm.rank() == 0 ? 4 : 5});
    const sdk::Status s = comm.allreduce(odd, sdk::ReduceOp::Sum);
    EXPECT_FALSE(s.ok);
    EXPECT_TRUE(contains(s.message,
                         "collective mismatch (runtime.check_collectives): rank 1 issued allreduce of 5 "
                         "float32"))
        << s.message;
    EXPECT_TRUE(contains(s.message, "where rank 0 issued allreduce of 4 float32")) << s.message;
    EXPECT_TRUE(contains(s.message, "collective #2")) << s.message;
    EXPECT_EQ(comm.flight_recorder()->entries().back().state, comm::CallState::Failed);
  });
  for (const comm::CommStats& c : counted) {
    EXPECT_EQ(c.calls, 1u) << "the check's exchange is not a call of the strategy's";
    EXPECT_EQ(c.bytes_sent, 16u) << "2(n-1)/n x 16 bytes, nothing for the check";
  }
}

// Rank 2 of 3 does not come to the second allreduce for a while: the ranks that wait in it dump their
// recorders, rank 2's watchdog thread answers their request with its own, and the verdict names rank 2,
// the collective and its number, in the report and in verdict.json.
TEST(RecorderLayer, AHungCollectiveOnThreadRanksIsBlamedOnTheRankThatDidNotCome) {
  const std::filesystem::path cell = test::scratch_dir();
  const DumpDirectory dumps(cell);
  test::HangReports hangs;
  const test::RanksOptions options = hangs.watched(0.3, 4);
  run_ranks(
      3,
      [](comm::HostCommunicator& comm) {
        torch::Tensor t = torch::ones({8});
        sdk::collective::allreduce(comm, t);  // #1
        if (comm.rank() == 2) std::this_thread::sleep_for(std::chrono::milliseconds(3500));
        sdk::collective::allreduce(comm, t);  // #2: ranks 0 and 1 wait for rank 2
      },
      options);
  ASSERT_FALSE(hangs.reports.empty());
  for (const comm::HangReport& r : hangs.reports) {
    EXPECT_NE(r.rank, 2) << "the late rank was in no call";
    EXPECT_EQ(r.seq, 2u);
    EXPECT_TRUE(contains(r.verdict, "rank 2 did not finish allreduce #2")) << r.verdict;
  }
  std::ifstream in(cell / "flight-recorder" / "verdict.json");
  ASSERT_TRUE(in) << "verdict.json written";
  const nlohmann::json verdict = nlohmann::json::parse(in);
  EXPECT_EQ(verdict.at("kind"), "hang");
  EXPECT_EQ(verdict.at("summary"), "rank 2 did not finish allreduce #2");
  for (int r = 0; r < 3; ++r)
    EXPECT_TRUE(std::filesystem::exists(cell / "flight-recorder" / ("rank-" + std::to_string(r) + ".json")))
        << "rank " << r << " dumped";
}

// A hang inside a group: the group's own dump files and numbers, and the verdict says which group.
TEST(RecorderLayer, AHungGroupCollectiveIsJudgedFromTheGroupsDumps) {
  const std::filesystem::path cell = test::scratch_dir();
  const DumpDirectory dumps(cell);
  test::HangReports hangs;
  const test::RanksOptions options = hangs.watched(0.3, 4);
  run_ranks(
      2,
      [](comm::HostCommunicator& comm) {
        std::unique_ptr<sdk::Group> all = sdk::collective::split(comm, 0, comm.rank());
        if (comm.rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(3500));
        sdk::collective::barrier(*all);  // the group's #1
      },
      options);
  ASSERT_EQ(hangs.reports.size(), 1u);
  EXPECT_EQ(hangs.reports[0].rank, 1);
  EXPECT_TRUE(contains(hangs.reports[0].verdict, "in group split(0) (job ranks 0,1): rank 0 did not finish barrier #1"))
      << hangs.reports[0].verdict;
  EXPECT_TRUE(std::filesystem::exists(cell / "flight-recorder" / "group-split0-at0-rank-0.json"));
}

// Issue 27 on thread ranks: a ring of point-to-point messages in which rank 1 does not send for a while.
// Rank 2 waits on it in its receive, ranks 0 and 3 go on to the allreduce; from the positions alone ranks
// 1 and 2 look late, and rank 2's receive, recorded with its peer, names rank 1.
TEST(RecorderLayer, ARankThatNeverSendsIsNamedByTheRankWaitingOnIt) {
  const std::filesystem::path cell = test::scratch_dir();
  const DumpDirectory dumps(cell);
  test::HangReports hangs;
  const test::RanksOptions options = hangs.watched(0.3, 4);
  run_ranks(
      4,
      [](comm::HostCommunicator& comm) {
        const int right = (comm.rank() + 1) % comm.size(), left = (comm.rank() + comm.size() - 1) % comm.size();
        torch::Tensor out = torch::full({4}, static_cast<float>(comm.rank())), in = torch::zeros({4});
        if (comm.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(3500));
        sdk::collective::send(comm, out, right, 7);
        sdk::collective::recv(comm, in, left, 7);
        sdk::collective::allreduce(comm, in);  // #1
      },
      options);
  ASSERT_FALSE(hangs.reports.empty());
  for (const comm::HangReport& r : hangs.reports)
    EXPECT_TRUE(contains(r.verdict, "rank 1 did not finish allreduce #1")) << r.verdict;
  std::ifstream in(cell / "flight-recorder" / "rank-2.json");
  ASSERT_TRUE(in);
  EXPECT_EQ(nlohmann::json::parse(in).at("waiting_on"), nlohmann::json::array({1}));
}

}  // namespace
}  // namespace gradsweep
