// `ps` in async mode: each worker's gradient is applied on its own as it arrives; the loss falls and the
// server records how stale each gradient was.
#include "strategies/strategy_runs.hpp"

#include <gtest/gtest.h>

namespace gradsweep::test {
namespace {

TEST(PsAsync, LossFallsAndStalenessIsRecorded) {
  const TrainingRun run = train_tiny(TinyModel::Gpt2, 4, "ps", {"strategy.mode=async"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.output;
  const auto losses = run.losses();
  EXPECT_LT(losses.back(), losses.front() - 1.0);
  // Four computing ranks, each gradient applied alone: between a worker's pull and the arrival of its
  // next gradient the server applies the other three ranks' gradients, so the staleness is 3 on average
  // (exactly, from the second step on: every rank is applied once a step), and one worker's is at most
  // 2 x 4 - 1 when it was served first in one step and last in the next.
  for (const auto& s : run.steps) {
    const auto& plugin = s.at("plugin");
    ASSERT_TRUE(plugin.contains("staleness_mean")) << s.dump();
    const double mean = plugin.at("staleness_mean").get<double>(), max = plugin.at("staleness_max").get<double>();
    EXPECT_GE(max, mean);
    EXPECT_LE(max, 7.0);
    if (s.at("step").get<int>() > 0) {
      EXPECT_EQ(mean, 3.0) << s.dump();
    }
    // The per-worker traffic: a gradient up and the parameters down.
    EXPECT_GT(plugin.at("ps_push_bytes_per_worker").get<double>(), 400000);
    EXPECT_GT(plugin.at("ps_pull_bytes_per_worker").get<double>(), 400000);
  }
  // The server's link carries everything: three workers' gradients in, three parameter copies out.
  const auto& sent = run.steps.back().at("ranks").at("bytes_sent");
  EXPECT_GT(sent[0].get<double>(), 2.9 * sent[1].get<double>());
}

TEST(DpsMemory, OptimizerStatePerRankIsAQuarterOfRingsAtFourRanks) {
  const TrainingRun ring = train_tiny(TinyModel::Gpt2, 4, "ring", {}, 3);
  const TrainingRun dps = train_tiny(TinyModel::Gpt2, 4, "dps", {}, 3);
  ASSERT_EQ(ring.result.exit_code, 0) << ring.result.output;
  ASSERT_EQ(dps.result.exit_code, 0) << dps.result.output;
  const double ring_bytes = ring.steps.back().at("plugin").at("optimizer_state_bytes").get<double>();
  const double dps_bytes = dps.steps.back().at("plugin").at("optimizer_state_bytes").get<double>();
  EXPECT_GT(ring_bytes, 0);
  EXPECT_LE(dps_bytes, 0.3 * ring_bytes) << "dps " << dps_bytes << " vs ring " << ring_bytes;
}

}  // namespace
}  // namespace gradsweep::test
