// Elastic cells for real (launcher.elastic, host/experiment/launch/elastic_cell.hpp): a 4-node ring cell on an emulated
// cluster loses node 3 mid-run, once by its rank being killed and once by its link being cut
// (`gradsweep cluster link NAME 3 down`). The cell ends within the collective deadline naming the node, goes on
// with 3 nodes from its last checkpoint (resharded), and finishes with the loss of the same cell run without a
// fault in the same sweep. The change of size is in status.json, provenance.json, summary.json and results.csv,
// the report keeps the resized cell apart, and no cluster is left. Needs root and `ip netns`; skips otherwise.
#include "emulated_test_support.hpp"
#include "support/skip_rule.hpp"

#include "runs/cell_status.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cmath>

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;
using runs::CellState;

constexpr int kDeadlineSeconds = 15;  // runtime.comm_timeout of the cell

// Two cells that train the same (they differ only in how often they checkpoint): the first to run loses node 3,
// the other is the uninterrupted reference. 12 sequences a step split over 4 and over 3 ranks alike.
// 700 steps: the fault lands soon after the first checkpoint (step 50), well before the end; more only adds
// minutes of training to the suite.
std::string elastic_experiment() {
  const fs::path corpus = byte_corpus();
  return "model: {name: gpt2, preset: gpt2-tiny, vocab_size: 257, block_size: 32}\n"
         "strategy: {name: ring}\n"
         "data: {train: " +
         (corpus / "train.bin").string() + ", val: " + (corpus / "val.bin").string() +
         "}\n"
         "train: {steps: 700, batch_size: 12, seq_len: 16, lr: 1e-3}\n"
         "eval: {batches: 2}\n"
         "runtime: {comm_timeout: " +
         std::to_string(kDeadlineSeconds) +
         "}\n"
         "launcher: {name: emulated, nodes: 4, threads: 1, link: {bandwidth: 1Gbit}, elastic: {min_nodes: 3}}\n"
         "matrix: {checkpoint.every: [50, 60]}\n";
}

// The cell that is running on its cluster and has a checkpoint to resume from, once there is one.
fs::path running_cell(const fs::path& out) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(out / "cells", ec)) {
    const nlohmann::json p = read_json(e.path() / "provenance.json");
    if (p.is_object() && p.value("end", "x").empty() && !cluster_of(e.path()).empty() &&
        fs::exists(e.path() / "checkpoint"))
      return e.path();
  }
  return {};
}

struct ElasticRun {
  fs::path resized, reference;
  std::string cluster;  // the faulted cell's first cluster
  double seconds_to_resize = 0;
  std::string log;
};

// Runs the sweep, applies `fault` to node 3 of the first cell's cluster, and waits for the sweep to end.
template <typename Fault>
ElasticRun run_with_fault(const fs::path& dir, Fault fault) {
  write_text(dir / "exp.yaml", elastic_experiment());
  const pid_t pid = start_sweep(dir / "exp.yaml", dir / "out", dir / "out.log");
  ElasticRun run;
  fs::path cell;
  EXPECT_TRUE(wait_for([&] { return !(cell = running_cell(dir / "out")).empty(); }, 120)) << read_text(dir / "out.log");
  if (cell.empty()) {
    ::kill(pid, SIGINT);
    ::waitpid(pid, nullptr, 0);
    return run;
  }
  run.cluster = cluster_of(cell);
  fault(run.cluster);
  const auto faulted = std::chrono::steady_clock::now();
  EXPECT_TRUE(wait_for([&] { return !runs::read_cell_status(cell).resizes.empty(); }, 120));
  run.seconds_to_resize = std::chrono::duration<double>(std::chrono::steady_clock::now() - faulted).count();
  int status = 0;
  ::waitpid(pid, &status, 0);
  run.log = read_text(dir / "out.log");
  EXPECT_EQ(WEXITSTATUS(status), 0) << run.log;
  for (const auto& e : fs::directory_iterator(dir / "out" / "cells"))
    (e.path() == cell ? run.resized : run.reference) = e.path();
  return run;
}

// What every elastic run must show, whichever way node 3 was lost.
void expect_resized_to_three(const ElasticRun& run, const std::string& why) {
  ASSERT_FALSE(run.resized.empty()) << run.log;
  const runs::CellStatus status = runs::read_cell_status(run.resized);
  EXPECT_EQ(status.state, runs::CellState::Ok) << status.reason;
  ASSERT_EQ(status.resizes.size(), 1u);
  EXPECT_EQ(status.resizes[0].from_nodes, 4);
  EXPECT_EQ(status.resizes[0].to_nodes, 3);
  EXPECT_EQ(status.resizes[0].lost_nodes, std::vector<int>{3});
  EXPECT_NE(status.resizes[0].why.find(why), std::string::npos) << status.resizes[0].why;
  EXPECT_NE(run.log.find("lost 1 of its 4 nodes"), std::string::npos) << run.log;

  const nlohmann::json s = read_json(run.resized / "summary.json");
  EXPECT_EQ(s["world_size"], 3);
  EXPECT_EQ(s["resharded"]["from_world_size"], 4) << s.dump();
  EXPECT_EQ(s["elastic"]["resized"], "4->3 nodes");
  EXPECT_EQ(s["cluster"]["nodes"], 3);
  const nlohmann::json p = read_json(run.resized / "provenance.json");
  EXPECT_EQ(p["elastic"]["resizes"][0]["lost_nodes"], nlohmann::json::array({3})) << p.dump();
  EXPECT_NE(read_text(run.resized / "rank-0.log").find("resharded from 4 ranks to 3"), std::string::npos);

  // An exact strategy resharded at the same global batch continues the uninterrupted run: the same final loss up
  // to float rounding (measured 5e-8 relative).
  const nlohmann::json r = read_json(run.reference / "summary.json");
  EXPECT_EQ(r["world_size"], 4);
  EXPECT_EQ(r["elastic"]["resized"], "");
  const double loss = s["val_loss"].get<double>(), uninterrupted = r["val_loss"].get<double>();
  EXPECT_LT(std::abs(loss - uninterrupted) / uninterrupted, 1e-4) << loss << " vs " << uninterrupted;

  const fs::path out = run.resized.parent_path().parent_path();
  const std::string csv = read_text(out / "results.csv");
  EXPECT_NE(csv.find(",ok,,4->3 nodes,"), std::string::npos) << csv;
  EXPECT_NE(read_text(out / "report.md").find("resized=4->3 nodes"), std::string::npos)
      << "the report must keep the resized cell apart";
  EXPECT_EQ(objects_of(run.cluster), "") << "the lost cluster was left";
  EXPECT_EQ(objects_of(cluster_of(run.resized)), "") << "the cluster of 3 was left";
}

class ElasticCellRun : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = missing_cluster_requirement();
    if (!why.empty()) GRADSWEEP_SKIP_UNLESS_CI_AS_ROOT("needs root and ip netns: " + why);
  }
};

TEST_F(ElasticCellRun, NodeWhoseRankIsKilledIsLeftAndTheCellFinishesOnThree) {
  const ElasticRun run = run_with_fault(scratch_dir(), [](const std::string& cluster) {
    ASSERT_EQ(kill_ranks_in("gsc-" + cluster + "-n3"), 1) << "no rank on node 3 of " << cluster;
  });
  expect_resized_to_three(run, "killed: rank 3 signal 9");
  EXPECT_LT(run.seconds_to_resize, 30) << "mpirun sees a killed rank at once";
}

TEST_F(ElasticCellRun, NodeWhoseLinkIsCutIsLeftWithinTheDeadlineAndTheCellFinishesOnThree) {
  const ElasticRun run = run_with_fault(scratch_dir(), [](const std::string& cluster) {
    const CommandResult cut = run_command(gradsweep("cluster link " + cluster + " 3 down"));
    ASSERT_EQ(cut.exit_code, 0) << cut.output;
  });
  expect_resized_to_three(run, "link down on node 3");
  // The deadline, then up to 10 s for mpirun, which waits for the unreachable node's daemon, and a margin.
  EXPECT_LT(run.seconds_to_resize, kDeadlineSeconds + 10 + 20);
  EXPECT_NE(run.log.find("mpirun is still waiting"), std::string::npos) << run.log;
}

}  // namespace
}  // namespace gradsweep::test
