// `hsdp` (fsdp inside each node, the shards replicated across nodes) in real MPI jobs, with nodes made by
// GRADSWEEP_RANKS_PER_NODE on this one machine (set here, inherited by mpirun and its ranks): it
// reproduces `single` at 2 nodes of 2, 2 nodes of 1 and 1 node of 2, holds the parameter memory the
// node-shard layout predicts (with and without prefetch), refuses unequal nodes, and resumes bit for bit.
#include "strategies/strategy_runs.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <sstream>

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;

// Peak parameter bytes per rank with K ranks per node: every unit's node shard (each padded to a multiple
// of K) plus the root whole and `whole_blocks` blocks whole (two with prefetch: the one computing and the
// next one gathering).
double expected_resident_bytes(int per_node, int whole_blocks) {
  const auto shard = [&](std::int64_t numel) { return (numel + per_node - 1) / per_node; };
  const std::int64_t shards = shard(kTinyGpt2RootNumel) + kTinyGpt2Layers * shard(kTinyGpt2BlockNumel);
  return 4.0 * static_cast<double>(shards + per_node * shard(kTinyGpt2RootNumel) +
                                   whole_blocks * per_node * shard(kTinyGpt2BlockNumel));
}

// GRADSWEEP_RANKS_PER_NODE for one scope: mpirun's ranks on this machine inherit it.
class RanksPerNode {
 public:
  explicit RanksPerNode(int k) { ::setenv("GRADSWEEP_RANKS_PER_NODE", std::to_string(k).c_str(), 1); }
  ~RanksPerNode() { ::unsetenv("GRADSWEEP_RANKS_PER_NODE"); }
  RanksPerNode(const RanksPerNode&) = delete;
  RanksPerNode& operator=(const RanksPerNode&) = delete;
};

TrainingRun train_hsdp(int nodes, int per_node, const std::vector<std::string>& overrides = {}, int steps = 20) {
  const RanksPerNode env(per_node);
  return train_tiny(TinyModel::Gpt2, nodes * per_node, "hsdp", overrides, steps);
}

void expect_matches_single(const TrainingRun& run) {
  const TrainingRun& reference = single_reference(TinyModel::Gpt2);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.output;
  ASSERT_EQ(run.steps.size(), 20u);
  EXPECT_LT(max_relative_difference(run.losses(), reference.losses()), 1e-5);
  EXPECT_LT(run.losses().back(), run.losses().front());
  EXPECT_NEAR(run.summary.at("val_loss").get<double>(), reference.summary.at("val_loss").get<double>(),
              1e-4 * reference.summary.at("val_loss").get<double>());
}

struct Shape {
  int nodes, per_node;
};
void PrintTo(const Shape& s, std::ostream* out) { *out << s.nodes << "x" << s.per_node; }

class HsdpGpt2 : public ::testing::TestWithParam<Shape> {};

TEST_P(HsdpGpt2, MatchesSingleAndHoldsANodeShardPlusRootPlusTwoBlocks) {
  const Shape shape = GetParam();
  const TrainingRun run = train_hsdp(shape.nodes, shape.per_node);
  expect_matches_single(run);
  ASSERT_EQ(run.summary.at("params").get<std::int64_t>(),
            kTinyGpt2RootNumel + kTinyGpt2Layers * kTinyGpt2BlockNumel);  // the layout above
  const std::string nodes = "hsdp: " + std::to_string(shape.nodes) + " node(s) of " + std::to_string(shape.per_node) +
                            " rank(s): parameters sharded over the node, replicated across nodes, next unit prefetched";
  EXPECT_NE(run.log(0).find(nodes), std::string::npos) << run.log(0);
  const double model_bytes = 4.0 * static_cast<double>(kTinyGpt2RootNumel + kTinyGpt2Layers * kTinyGpt2BlockNumel);
  for (const auto& step : run.steps) {
    EXPECT_EQ(step.at("plugin").at("param_bytes_resident").get<double>(), expected_resident_bytes(shape.per_node, 2));
    // AdamW's two moments for this rank's node shard only (its padding excluded).
    EXPECT_LE(step.at("plugin").at("optimizer_state_bytes").get<double>(), 2 * model_bytes / shape.per_node + 64);
    EXPECT_GE(step.at("plugin").at("optimizer_state_bytes").get<double>(), 2 * model_bytes / shape.per_node - 64);
  }
}

INSTANTIATE_TEST_SUITE_P(Nodes, HsdpGpt2, ::testing::Values(Shape{2, 2}, Shape{2, 1}, Shape{1, 2}),
                         [](const auto& info) {
                           return std::to_string(info.param.nodes) + "x" + std::to_string(info.param.per_node);
                         });

// Without prefetch a unit is gathered only when its forward or backward begins: one block whole at a time.
TEST(HsdpWithoutPrefetch, HoldsOneBlockWholeAndStillMatchesSingle) {
  const TrainingRun run = train_hsdp(2, 2, {"strategy.prefetch=false"});
  expect_matches_single(run);
  EXPECT_EQ(run.steps.back().at("plugin").at("param_bytes_resident").get<double>(), expected_resident_bytes(2, 1));
}

// Two micro-batches per rank: gradients accumulate until the last one's backward reduce-scatters them.
TEST(HsdpMicroBatches, AccumulatesUntilTheLastMicroBatch) {
  expect_matches_single(train_hsdp(2, 2, {"train.micro_batch=2"}));
}

// 3 ranks as nodes of 2: the last node would have one rank, whose shards no other node holds.
TEST(HsdpUnequalNodes, AreRefused) {
  const RanksPerNode env(2);
  const TrainingRun uneven = train_tiny(TinyModel::Gpt2, 3, "hsdp", {"train.batch_size=6"}, 2);
  EXPECT_NE(uneven.result.exit_code, 0);
  EXPECT_NE(uneven.result.output.find("needs as many ranks"), std::string::npos) << uneven.result.output;
}

// A job on 2 nodes of 2 stopped after step 6 and resumed from its step-4 checkpoint trains the same
// losses: the node shards come back through the whole-model checkpoint, their optimizer state from each
// rank's strategy state.
TEST(HsdpResume, InterruptedEqualsUninterruptedBitForBit) {
  const RanksPerNode env(2);
  const TrainingRun whole = train_tiny(TinyModel::Gpt2, 4, "hsdp", {"checkpoint.every=4"}, 10);
  ASSERT_EQ(whole.result.exit_code, 0) << whole.result.output;
  TrainingRun cut = train_tiny(TinyModel::Gpt2, 4, "hsdp", {"checkpoint.every=4 --stop-after 6"}, 10);
  ASSERT_EQ(cut.result.exit_code, 0) << cut.result.output;
  const fs::path cell = cut.dir.parent_path() / "cell.yaml";
  const auto resumed = run_command(mpirun(4,
                                          gradsweep_binary().string() + " train " + cell.string() + " --out " +
                                              cut.dir.string() + " --set checkpoint.every=4",
                                          "", 120));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(read_text(cut.dir / "rank-0.log").find("at step 4"), std::string::npos);
  std::vector<double> losses;
  std::istringstream lines(read_text(cut.dir / "metrics.jsonl"));
  for (std::string line; std::getline(lines, line);) losses.push_back(nlohmann::json::parse(line).at("loss"));
  EXPECT_EQ(losses, whole.losses());
}

}  // namespace
}  // namespace gradsweep::test
