// `fsdp` (ZeRO-3 over the SDK 1.4 model units) in real MPI jobs: it reproduces `single` at 2 and 4 ranks,
// holds the parameter memory the unit layout predicts, falls back to one unit (with a warning) for a
// model that declares none or predates SDK 1.4, and resumes bit for bit.
#include "strategies/strategy_runs.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <sstream>

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;

// Peak parameter bytes per rank: every unit's shard (each padded to a multiple of N) plus the root and
// the largest unit whole (one block at a time is gathered, in forward and in backward).
double expected_resident_bytes(int ranks) {
  const auto shard = [&](std::int64_t numel) { return (numel + ranks - 1) / ranks; };
  const std::int64_t shards = shard(kTinyGpt2RootNumel) + kTinyGpt2Layers * shard(kTinyGpt2BlockNumel);
  return 4.0 * static_cast<double>(shards + ranks * shard(kTinyGpt2RootNumel) + ranks * shard(kTinyGpt2BlockNumel));
}

void expect_matches_single(const TrainingRun& run, TinyModel model) {
  const TrainingRun& reference = single_reference(model);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.output;
  ASSERT_EQ(run.steps.size(), 20u);
  EXPECT_LT(max_relative_difference(run.losses(), reference.losses()), 1e-5);
  EXPECT_LT(run.losses().back(), run.losses().front());
  EXPECT_NEAR(run.summary.at("val_loss").get<double>(), reference.summary.at("val_loss").get<double>(),
              1e-4 * reference.summary.at("val_loss").get<double>());
}

class FsdpGpt2 : public ::testing::TestWithParam<int> {};

TEST_P(FsdpGpt2, MatchesSingleAndHoldsAShardPlusRootPlusOneBlock) {
  const int ranks = GetParam();
  const TrainingRun run = train_tiny(TinyModel::Gpt2, ranks, "fsdp");
  expect_matches_single(run, TinyModel::Gpt2);
  ASSERT_EQ(run.summary.at("params").get<std::int64_t>(),
            kTinyGpt2RootNumel + kTinyGpt2Layers * kTinyGpt2BlockNumel);  // the layout above
  EXPECT_EQ(run.log(0).find("declares no units"), std::string::npos);
  for (const auto& step : run.steps) {
    EXPECT_EQ(step.at("plugin").at("param_bytes_resident").get<double>(), expected_resident_bytes(ranks));
    // AdamW's two moments for this rank's shard only (its padding excluded).
    const double model_bytes = 4.0 * static_cast<double>(kTinyGpt2RootNumel + kTinyGpt2Layers * kTinyGpt2BlockNumel);
    EXPECT_LE(step.at("plugin").at("optimizer_state_bytes").get<double>(), 2 * model_bytes / ranks + 64);
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, FsdpGpt2, ::testing::Values(2, 4),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

// Two micro-batches per rank: the full gradients accumulate in .grad over the first and are
// reduce-scattered unit by unit in the last one's backward; parameters are still freed after each use.
TEST(FsdpMicroBatches, AccumulatesUntilTheLastMicroBatch) {
  const TrainingRun run = train_tiny(TinyModel::Gpt2, 2, "fsdp", {"train.micro_batch=2"});
  expect_matches_single(run, TinyModel::Gpt2);
  EXPECT_EQ(run.steps.back().at("plugin").at("param_bytes_resident").get<double>(), expected_resident_bytes(2));
}

// lstm-tiny declares its one layer as a unit and then runs it through the per-layer path.
TEST(FsdpLstm, MatchesSingleAtTwoRanks) {
  expect_matches_single(train_tiny(TinyModel::Lstm, 2, "fsdp"), TinyModel::Lstm);
}

// `bigram` declares no units (SDK 1.4); `bigram13` is the same model built as an SDK 1.3 plugin, which the
// host never asks for units. Both run as one unit: still `single`'s losses, with the warning.
TEST(FsdpWithoutUnits, FallsBackToOneUnitWithAWarning) {
  ::setenv("GRADSWEEP_PLUGIN_PATH", GRADSWEEP_TEST_STRATEGY_PLUGINS, 1);
  const TrainingRun& reference = single_reference(TinyModel::BigramWords, 5);
  for (const std::string name : {"bigram", "bigram13"}) {
    const TrainingRun run = train_tiny(TinyModel::BigramWords, 2, "fsdp", {"model.name=" + name}, 5);
    ASSERT_EQ(run.result.exit_code, 0) << run.result.output;
    EXPECT_NE(run.log(0).find("declares no units, so it runs as one unit"), std::string::npos) << run.log(0);
    EXPECT_LT(max_relative_difference(run.losses(), reference.losses()), 1e-5) << name;
  }
  ::unsetenv("GRADSWEEP_PLUGIN_PATH");
}

// A job stopped after step 6 and resumed from its step-4 checkpoint (the shards come back through the
// whole-model checkpoint, the optimizer's shard state from the strategy's) trains the same losses.
TEST(FsdpResume, InterruptedEqualsUninterruptedBitForBit) {
  const TrainingRun whole = train_tiny(TinyModel::Gpt2, 2, "fsdp", {"checkpoint.every=4"}, 10);
  ASSERT_EQ(whole.result.exit_code, 0) << whole.result.output;
  TrainingRun cut = train_tiny(TinyModel::Gpt2, 2, "fsdp", {"checkpoint.every=4 --stop-after 6"}, 10);
  ASSERT_EQ(cut.result.exit_code, 0) << cut.result.output;
  const fs::path cell = cut.dir.parent_path() / "cell.yaml";
  const auto resumed = run_command(mpirun(2,
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
