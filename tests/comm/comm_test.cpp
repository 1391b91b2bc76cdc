// The MPI backend in real processes: collective_check under `mpirun -np N` for N = 1..4 (and the ring
// with unusual tuning), a rank that fails or hangs ending the whole job within seconds, `gradsweep
// train` and `gradsweep bench comm` under mpirun.
#include "support/test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <regex>

namespace gradsweep {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Never let a broken backend hang the suite: `timeout` ends mpirun (exit 124) well before ctest would.
// --oversubscribe: the CI machine may have fewer cores than ranks; --bind-to none: let the ranks share them.
std::string mpirun(int ranks, const std::string& command, const std::string& env = "") {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " + env +
         " timeout -k 5 60 mpirun --oversubscribe --bind-to none -np " + std::to_string(ranks) + " " + command;
}

std::string collective_check(const std::string& args) { return std::string(GRADSWEEP_COLLECTIVE_CHECK) + " " + args; }

struct Timed {
  test::CommandResult result;
  double seconds;
};

Timed run_timed(const std::string& command) {
  const auto t0 = Clock::now();
  test::CommandResult r = test::run_command(command);
  return {std::move(r), std::chrono::duration<double>(Clock::now() - t0).count()};
}

class CollectivesOnRanks : public ::testing::TestWithParam<int> {};

TEST_P(CollectivesOnRanks, MatchLocalReferencesAndCountBytes) {
  const int ranks = GetParam();
  const auto r = test::run_command(mpirun(ranks, collective_check("verify")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("FAIL"), std::string::npos) << r.output;
  for (int rank = 0; rank < ranks; ++rank) {
    const std::regex done("DONE rank " + std::to_string(rank) + " of " + std::to_string(ranks) +
                          " checks=([0-9]+) failures=0");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.output, m, done)) << "rank " << rank << " did not finish cleanly:\n" << r.output;
    EXPECT_GT(std::stoi(m[1]), 300);  // the full list ran, not an early exit
  }
  // Open MPI on Debian is built with MPI_THREAD_MULTIPLE: the level asked for is granted.
  EXPECT_NE(r.output.find("MPI_THREAD_MULTIPLE"), std::string::npos) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Mpi, CollectivesOnRanks, ::testing::Values(1, 2, 3, 4),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

// Hierarchical allreduce on "nodes" made by GRADSWEEP_RANKS_PER_NODE on this one machine: {ranks, K}.
// 4 ranks / 2 = 2 nodes x 2; 6 / 3 = 2 nodes x 3 (odd chunks inside the node); 4 / 1 = 4 nodes x 1
// (only the cross-node ring moves data); 6 / 2 = 3 nodes x 2; 5 / 3 = uneven nodes of 3 and 2, which
// runs as the flat ring (and says so). Each checks every dtype, op and awkward size plus 8 MiB.
struct NodeShape {
  int ranks, per_node, nodes;
  bool uneven;
};

class HierarchicalOnNodes : public ::testing::TestWithParam<NodeShape> {};

TEST_P(HierarchicalOnNodes, MatchesTheReferenceSums) {
  const NodeShape shape = GetParam();
  const auto r =
      test::run_command(mpirun(shape.ranks, "-x GRADSWEEP_RANKS_PER_NODE " + collective_check("hierarchical"),
                               "GRADSWEEP_RANKS_PER_NODE=" + std::to_string(shape.per_node)));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("FAIL"), std::string::npos) << r.output;
  for (int rank = 0; rank < shape.ranks; ++rank) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(
        r.output, m,
        std::regex("rank " + std::to_string(rank) + ": node rank ([0-9]+) of ([0-9]+), nodes ([0-9]+), uneven: (.*)")))
        << r.output;
    const int node_size = std::stoi(m[2]);
    EXPECT_EQ(std::stoi(m[1]), rank % shape.per_node) << r.output;
    if (shape.uneven) {
      EXPECT_NE(m[4].str().find("nodes have between 2 and 3 ranks"), std::string::npos) << r.output;
    } else {
      EXPECT_EQ(m[4].str(), "no") << r.output;
      EXPECT_EQ(node_size, shape.per_node);
      EXPECT_EQ(std::stoi(m[3]), shape.nodes);
    }
    std::smatch done;
    ASSERT_TRUE(std::regex_search(r.output, done,
                                  std::regex("DONE rank " + std::to_string(rank) + " of " +
                                             std::to_string(shape.ranks) + " hierarchical checks=([0-9]+) failures=0")))
        << r.output;
    EXPECT_GT(std::stoi(done[1]), 150);
  }
  if (shape.uneven) {
    EXPECT_NE(r.output.find("hierarchical allreduce runs as the flat ring: nodes have between 2 and 3 ranks"),
              std::string::npos)
        << r.output;
  }
}

INSTANTIATE_TEST_SUITE_P(Mpi, HierarchicalOnNodes,
                         ::testing::Values(NodeShape{4, 2, 2, false}, NodeShape{6, 3, 2, false},
                                           NodeShape{4, 1, 4, false}, NodeShape{6, 2, 3, false},
                                           NodeShape{5, 3, 2, true}),
                         [](const auto& info) {
                           const NodeShape& s = info.param;
                           return s.uneven ? std::string("uneven3and2")
                                           : std::to_string(s.nodes) + "nodesOf" + std::to_string(s.per_node);
                         });

TEST(HierarchicalSplit, ABadRanksPerNodeIsRefusedByName) {
  const auto r = test::run_command(
      mpirun(2, "-x GRADSWEEP_RANKS_PER_NODE " + collective_check("hierarchical"), "GRADSWEEP_RANKS_PER_NODE=two"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("GRADSWEEP_RANKS_PER_NODE='two': expected a positive integer"), std::string::npos)
      << r.output;
}

// The ring with segments of 1000 bytes (so odd chunks split into several segments of uneven length,
// 250 float32 or 500 bfloat16 elements) and 3 exchanges in flight, on an odd number of ranks.
TEST(RingTuning, SmallSegmentsAndDeepPipelineOnThreeRanks) {
  const auto r = test::run_command(
      mpirun(3, "-x GRADSWEEP_RING_SEGMENT_BYTES -x GRADSWEEP_RING_LOOKAHEAD " + collective_check("ring"),
             "GRADSWEEP_RING_SEGMENT_BYTES=1000 GRADSWEEP_RING_LOOKAHEAD=3"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("FAIL"), std::string::npos) << r.output;
  for (int rank = 0; rank < 3; ++rank)
    EXPECT_TRUE(std::regex_search(
        r.output, std::regex("DONE rank " + std::to_string(rank) + " of 3 ring checks=[0-9]+ failures=0")))
        << r.output;
}

// A rank whose neighbour comes late to a ring allreduce waits without burning a core: on a machine with
// no spare core that CPU would be taken from the ranks still computing (docs/measurements/strategies.md).
TEST(RingWait, ALateNeighbourCostsTheWaitingRanksLittleCpu) {
  const auto r = test::run_command(mpirun(3, collective_check("late 2")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int rank = 0; rank < 2; ++rank) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.output, m,
                                  std::regex("rank " + std::to_string(rank) + ": waited ([0-9.]+) s, cpu ([0-9.]+) s")))
        << r.output;
    const double waited = std::stod(m[1]), cpu = std::stod(m[2]);
    EXPECT_GT(waited, 0.5) << r.output;  // it did wait for the late rank
    EXPECT_LT(cpu, 0.25 * waited) << "a waiting rank spent " << cpu << " s of CPU in " << waited << " s\n" << r.output;
  }
}

TEST(MpiFailure, RankThatThrowsEndsTheJobAndIsNamed) {
  const auto [r, seconds] = run_timed(mpirun(3, collective_check("throw 1")));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.exit_code, 124) << "the job hung until `timeout` ended it:\n" << r.output;
  EXPECT_LT(seconds, 30.0) << r.output;
  EXPECT_NE(r.output.find("[rank 1] [error] deliberate failure on rank 1"), std::string::npos) << r.output;
}

TEST(MpiFailure, CollectiveThatNeverCompletesTimesOut) {
  const auto [r, seconds] =
      run_timed(mpirun(2, "-x GRADSWEEP_COMM_TIMEOUT " + collective_check("hang 1"), "GRADSWEEP_COMM_TIMEOUT=2"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_LT(seconds, 30.0) << r.output;
  // The waiting rank names the call it is stuck in.
  EXPECT_NE(r.output.find("allreduce of 1024 float32 (4096 bytes) on rank 0 of 2 has waited"), std::string::npos)
      << r.output;
}

TEST(MpiFailure, AsyncCollectiveThatNeverCompletesTimesOut) {
  const auto [r, seconds] =
      run_timed(mpirun(2, "-x GRADSWEEP_COMM_TIMEOUT " + collective_check("hang-async 1"), "GRADSWEEP_COMM_TIMEOUT=2"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_LT(seconds, 30.0) << r.output;
  EXPECT_NE(r.output.find("allreduce_async of 1024 float32 (4096 bytes) on rank 0 of 2 has waited"), std::string::npos)
      << r.output;
}

// The stack's recorder layer over MPI marks an async call done when the backend's worker finished it, not
// when the caller got round to waiting (comm/core/async_progress.hpp): the timeline draws that span.
TEST(MpiAsync, TheFlightRecorderFollowsTheWorkerNotTheWait) {
  const auto r = test::run_command(mpirun(2, collective_check("async-progress")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int rank = 0; rank < 2; ++rank)
    EXPECT_NE(r.output.find("rank " + std::to_string(rank) + ": allreduce_async done, ended before the wait: yes"),
              std::string::npos)
        << r.output;
}

// Forensics (docs/communicators.md#flight-recorder): the job's error names the rank behind and the
// collective, and every rank that could answer left its dump in the directory given.
struct Forensic {
  Timed run;
  fs::path dumps;
};

Forensic misbehave(int ranks, const std::string& mode,
                   const std::string& env = "GRADSWEEP_COMM_TIMEOUT=2 GRADSWEEP_CHECK_COLLECTIVES=0") {
  const fs::path dir = test::scratch_dir();
  const std::string forward = "-x GRADSWEEP_COMM_TIMEOUT -x GRADSWEEP_CHECK_COLLECTIVES ";
  Timed run = run_timed(mpirun(ranks, forward + collective_check(mode + " " + dir.string()), env));
  return {std::move(run), dir / "flight-recorder"};
}

TEST(Forensics, StoppedRankIsNamedFromTheDumpsOfTheOthers) {
  const auto [run, dumps] = misbehave(3, "stop 1");
  const auto& r = run.result;
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_LT(run.seconds, 30.0) << r.output;
  EXPECT_NE(r.output.find("hang: rank 1 did not finish allreduce #2: rank 1 did not answer (stopped, or dead); "
                          "ranks 0,2 finished #1 and wait in allreduce of 1024 float32 (4.0 KiB) #2"),
            std::string::npos)
      << r.output;
  // (rank 1 may still dump once mpirun's SIGCONT wakes it, before it is killed: the verdict came first.)
  EXPECT_TRUE(fs::exists(dumps / "rank-0.json") && fs::exists(dumps / "rank-2.json")) << r.output;
  const auto dump = nlohmann::json::parse(test::read_text(dumps / "rank-2.json"));
  EXPECT_EQ(dump["waiting_in"]["seq"], 2);
  EXPECT_EQ(dump["entries"].back()["op"], "allreduce");
  EXPECT_EQ(dump["entries"].back()["state"], "running");
  EXPECT_EQ(dump["entries"].front()["state"], "done");
  EXPECT_EQ(nlohmann::json::parse(test::read_text(dumps / "verdict.json"))["summary"],
            "rank 1 did not finish allreduce #2");
}

// Issue 27's cut node, on the MPI ring: rank 1 stops before a ring allreduce of 4 ranks. Its neighbours
// wait on it (rank 2 to receive from it, rank 0 to send to it) and rank 3 waits on rank 2; the verdict
// must blame the rank they lead back to, not its neighbours.
TEST(Forensics, StoppedRankInARingIsTheOneItsNeighbourWaitsOn) {
  const auto [run, dumps] = misbehave(4, "ring-stop 1");
  const auto& r = run.result;
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_LT(run.seconds, 30.0) << r.output;
  EXPECT_NE(r.output.find("hang: rank 1 did not finish ring allreduce #2: rank 1 did not answer"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("rank 2 waits on rank 1"), std::string::npos) << r.output;
  ASSERT_TRUE(fs::exists(dumps / "rank-2.json")) << r.output;
  const auto dump = nlohmann::json::parse(test::read_text(dumps / "rank-2.json"));
  const auto waits = dump.value("waiting_on", std::vector<int>{});
  EXPECT_NE(std::find(waits.begin(), waits.end(), 1), waits.end()) << dump.dump(2);
  EXPECT_EQ(dump["waiting_in"]["seq"], 2);
  EXPECT_EQ(nlohmann::json::parse(test::read_text(dumps / "verdict.json"))["summary"],
            "rank 1 did not finish ring allreduce #2");
}

TEST(Forensics, RankStuckOutsideCollectivesAnswersAndIsNamed) {
  const auto [run, dumps] = misbehave(2, "hang 1");
  const auto& r = run.result;
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_LT(run.seconds, 30.0) << r.output;
  EXPECT_NE(
      r.output.find("hang: rank 1 did not finish allreduce #2: rank 1 is not in any collective (finished #1, "
                    "issued nothing since); rank 0 finished #1 and waits in allreduce of 1024 float32 (4.0 KiB) #2"),
      std::string::npos)
      << r.output;
  EXPECT_TRUE(fs::exists(dumps / "rank-0.json") && fs::exists(dumps / "rank-1.json")) << r.output;
}

TEST(Forensics, SkippedCollectiveIsNamedWhenTheRanksHang) {
  const auto [run, dumps] = misbehave(2, "skip 1");
  const auto& r = run.result;
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_LT(run.seconds, 30.0) << r.output;
  EXPECT_NE(
      r.output.find("ranks disagree on collective #2: rank 0 allreduce of 1024 float32 (4.0 KiB); rank 1 barrier"),
      std::string::npos)
      << r.output;
  EXPECT_TRUE(fs::exists(dumps / "rank-0.json") && fs::exists(dumps / "rank-1.json")) << r.output;
}

TEST(Forensics, CheckStopsASkippedCollectiveAtOnce) {
  const auto [run, dumps] = misbehave(2, "skip 1", "GRADSWEEP_COMM_TIMEOUT=20 GRADSWEEP_CHECK_COLLECTIVES=1");
  const auto& r = run.result;
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_LT(run.seconds, 15.0) << "the check, not the 20 s watchdog, must end it:\n" << r.output;
  EXPECT_NE(r.output.find("collective mismatch (runtime.check_collectives): rank 1 issued barrier where rank 0 "
                          "issued allreduce of 1024 float32 sum, collective #2"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(nlohmann::json::parse(test::read_text(dumps / "verdict.json"))["summary"], "allreduce #2");
}

TEST(Forensics, CheckStopsAnotherSizeNamingBothSides) {
  const auto [run, dumps] = misbehave(3, "size 2", "GRADSWEEP_COMM_TIMEOUT=20 GRADSWEEP_CHECK_COLLECTIVES=1");
  const auto& r = run.result;
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_LT(run.seconds, 15.0) << r.output;
  EXPECT_NE(r.output.find("rank 2 issued allreduce of 1000 float32 sum where rank 0 issued allreduce of 1024 "
                          "float32 sum, collective #2"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(fs::exists(dumps / "verdict.json")) << r.output;
}

// The check must not cry wolf: the whole verify suite (every collective, algorithm, dtype, async, argument
// errors) passes with it on, on 3 ranks.
TEST(Forensics, CheckFindsNothingWrongInTheFullSuite) {
  const auto r = test::run_command(
      mpirun(3, "-x GRADSWEEP_CHECK_COLLECTIVES " + collective_check("verify"), "GRADSWEEP_CHECK_COLLECTIVES=1"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("mismatch"), std::string::npos) << r.output;
  for (int rank = 0; rank < 3; ++rank)
    EXPECT_TRUE(
        std::regex_search(r.output, std::regex("DONE rank " + std::to_string(rank) + " of 3 checks=[0-9]+ failures=0")))
        << r.output;
}

TEST(Forensics, FailingRankAndTheRanksWaitingForItDump) {
  const auto [run, dumps] = misbehave(2, "throw 1", "GRADSWEEP_COMM_TIMEOUT=30 GRADSWEEP_CHECK_COLLECTIVES=0");
  const auto& r = run.result;
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_LT(run.seconds, 30.0) << r.output;
  ASSERT_TRUE(fs::exists(dumps / "rank-1.json")) << r.output;
  ASSERT_TRUE(fs::exists(dumps / "rank-0.json")) << r.output;
  EXPECT_NE(test::read_text(dumps / "rank-1.json").find("this rank failed: deliberate failure"), std::string::npos);
  EXPECT_NE(test::read_text(dumps / "rank-0.json").find("\"asked by rank 1\""), std::string::npos);
}

// `gradsweep bench comm` end to end, small: both algorithms timed and checked at every size.
TEST(BenchComm, TwoRanksPrintBothAlgorithmsAndWriteJson) {
  const fs::path dir = test::scratch_dir();
  const fs::path json = dir / "bench.json";
  const auto r =
      test::run_command(mpirun(2, test::gradsweep_binary().string() +
                                      " bench comm --max-bytes 64KiB --iters 2 --warmup 1 --json " + json.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("allreduce of float32 on 2 ranks"), std::string::npos) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(native +time\(us\).*ring +time\(us\).*ring/native)")))
      << r.output;
  // 1 KiB .. 64 KiB: seven rows, each with two algorithms and a ratio.
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(\n +65536 +16384 \|.*\|.*\| +[0-9.]+\n)"))) << r.output;
  const std::string report = test::read_text(json);
  EXPECT_NE(report.find("\"busbw_gbps\""), std::string::npos) << report;
  EXPECT_NE(report.find("\"ring\""), std::string::npos) << report;
}

// An algorithm and its bare twin (the backend without the communicator stack's layers) timed side by side,
// both checked on known data at every size.
TEST(BenchComm, BareTwinRunsBesideTheLayeredAlgorithm) {
  const fs::path dir = test::scratch_dir();
  const fs::path json = dir / "bench.json";
  const auto r = test::run_command(mpirun(2, test::gradsweep_binary().string() +
                                                 " bench comm --max-bytes 4KiB --iters 2 --warmup 1 "
                                                 "--algorithms ring,ring-bare --json " +
                                                 json.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(ring +time\(us\).*ring-bare +time\(us\).*ring-bare/ring)")))
      << r.output;
  const std::string report = test::read_text(json);
  EXPECT_NE(report.find("\"ring-bare\": {"), std::string::npos) << report;
  EXPECT_NE(report.find("\"ratio\""), std::string::npos) << report;
}

TEST(BenchComm, UnknownAlgorithmIsRefusedByName) {
  const auto r = test::run_command(test::gradsweep_binary().string() + " bench comm --algorithms ring,fast-bare");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("fast-bare not in"), std::string::npos) << r.output;
}

// A cell config for the byte-level corpus with the `single` strategy.
fs::path single_cell(const fs::path& dir) {
  const fs::path corpus = test::byte_corpus();
  const fs::path file = dir / "cell.yaml";
  test::write_text(file,
                   "model: {name: gpt2, preset: gpt2-tiny, vocab_size: 257, block_size: 32}\n"
                   "strategy: {name: single}\n"
                   "data: {train: " +
                       (corpus / "train.bin").string() + ", val: " + (corpus / "val.bin").string() +
                       "}\n"
                       "train: {steps: 3, batch_size: 4, seq_len: 32}\neval: {batches: 2}\n"
                       "metrics: {peak_flops: 1e10}\nruntime: {threads: 1}\n");
  return file;
}

std::string train(const fs::path& config, const fs::path& out) {
  return test::gradsweep_binary().string() + " train " + config.string() + " --out " + out.string();
}

TEST(MpiTrain, SingleStrategyOnTwoRanksFailsFastOnEveryRank) {
  const fs::path dir = test::scratch_dir();
  const auto [r, seconds] = run_timed(mpirun(2, train(single_cell(dir), dir / "cell")));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.exit_code, 124) << "the job hung until `timeout` ended it:\n" << r.output;
  EXPECT_LT(seconds, 45.0) << r.output;
  EXPECT_NE(r.output.find("runs on one rank, but the job has 2"), std::string::npos) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(\[rank [01]\] \[error\] .*runs on one rank)"))) << r.output;
  // Each rank's log file has its own error too.
  EXPECT_NE(test::read_text(dir / "cell" / "rank-1.log").find("runs on one rank"), std::string::npos);
}

TEST(MpiTrain, OneRankJobUsesTheMpiBackendAndFinishes) {
  const fs::path dir = test::scratch_dir();
  const auto r = test::run_command(mpirun(1, train(single_cell(dir), dir / "cell")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("communicator: mpi, rank 0 of 1"), std::string::npos) << r.output;
  EXPECT_NE(test::read_text(dir / "cell" / "summary.json").find("\"comm_backend\": \"mpi\""), std::string::npos);
}

}  // namespace
}  // namespace gradsweep
