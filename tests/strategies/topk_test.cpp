// `topk` (Deep Gradient Compression) in real MPI jobs on gpt2-tiny and the fortunes corpus: the loss falls,
// every step moves exactly the K values and K indices per rank it claims, the ranks end with identical
// parameters, a cut and resumed run is the uninterrupted one bit for bit (velocity and accumulation
// checkpointed), sending 100% without momentum reproduces `single`, and bad options are refused.
#include "strategies/compressed_runs.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace gradsweep::test {
namespace {

// K: ceil(ratio% of each tensor), at least one element of each.
std::int64_t topk_selected(double ratio_percent) {
  std::int64_t k = 0;
  for (const auto& shape : gpt2_tiny_shapes()) {
    const std::int64_t numel = numel_of(shape);
    k += std::clamp<std::int64_t>(static_cast<std::int64_t>(std::ceil(numel * ratio_percent / 100.0)), 1, numel);
  }
  return k;
}

// gpt2-tiny's gradient elements (compressed_runs.hpp's shapes: 257 ids in 384 rows).
constexpr std::int64_t kGpt2TinyElements = 126720;

// Warm-up steps allreduce the whole (momentum-corrected) gradient; sparse ones allgather K float32 values
// and K int32 indices.
auto topk_bytes(double ratio_percent, std::int64_t warmup_steps, int ranks) {
  const std::int64_t k = topk_selected(ratio_percent);
  return [=](std::int64_t step) {
    if (step < warmup_steps) return allreduce_bytes(kGpt2TinyElements, ranks);
    return 2 * allgather_bytes(k, ranks);
  };
}

// DGC as the paper runs it: plain SGD outside (DGC's momentum 0.9 inside), 1% of each tensor, two dense
// warm-up steps; the whole run is checked, then cut after 10 steps and resumed from step 8.
TEST(TopkRuns, TwoRanksTrainMoveTheClaimedBytesAndResumeBitForBit) {
  const auto dir = scratch_dir();
  const std::vector<std::string> options{"strategy.warmup_steps=2", "train.optimizer=sgd", "train.momentum=0",
                                         "train.lr=0.5", "checkpoint.every=4"};
  const TrainingRun whole = train_into(dir, "whole", 2, "topk", options, 12);
  ASSERT_EQ(whole.result.exit_code, 0) << whole.result.output;
  ASSERT_EQ(whole.steps.size(), 12u);
  EXPECT_LT(whole.losses().back(), whole.losses().front() - 1.0);
  EXPECT_EQ(unexpected_bytes(whole, 2, topk_bytes(1.0, 2, 2)), "");
  EXPECT_EQ(parameters_differ(whole.dir, 2, 12), "");
  EXPECT_NE(whole.log(0).find("1275 of 126720 gradient elements sent per step"), std::string::npos);
  EXPECT_EQ(whole.log(0).find("assumes plain SGD"), std::string::npos) << "no warning for the optimizer DGC assumes";

  const TrainingRun cut = train_into(dir, "resumed", 2, "topk", options, 12, " --stop-after 10");
  ASSERT_EQ(cut.result.exit_code, 0) << cut.result.output;
  const TrainingRun resumed = train_into(dir, "resumed", 2, "topk", options, 12);
  ASSERT_EQ(resumed.result.exit_code, 0) << resumed.result.output;
  EXPECT_NE(resumed.log(0).find("at step 8"), std::string::npos) << resumed.log(0);
  EXPECT_EQ(resumed.losses(), whole.losses());  // bit for bit
}

// Four ranks, 10%, no DGC momentum under the default AdamW: plain top-k with error feedback.
TEST(TopkRuns, FourRanksAgreeAndMoveTheClaimedBytes) {
  const TrainingRun run =
      train_tiny(TinyModel::Gpt2, 4, "topk", {"strategy.ratio_percent=10", "strategy.momentum=0"}, 12);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.output;
  ASSERT_EQ(run.steps.size(), 12u);
  EXPECT_LT(run.losses().back(), run.losses().front() - 0.5);
  EXPECT_EQ(unexpected_bytes(run, 4, topk_bytes(10.0, 0, 4)), "");
  EXPECT_EQ(parameters_differ(run.dir, 4, 12), "");
}

// 100% of every tensor, no momentum, no clipping (DGC clips each rank locally, `single` globally): the
// sparse exchange carries the whole gradient, and the run is `single`'s.
TEST(TopkRuns, EverythingSentWithoutMomentumReproducesSingle) {
  const TrainingRun& reference = single_reference(TinyModel::Gpt2, 20, {"train.grad_clip=0"});
  const std::vector<std::string> options{"strategy.ratio_percent=100", "strategy.momentum=0", "train.grad_clip=0"};
  const TrainingRun run = train_tiny(TinyModel::Gpt2, 2, "topk", options);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.output;
  ASSERT_EQ(run.steps.size(), 20u);
  EXPECT_LT(max_relative_difference(run.losses(), reference.losses()), 1e-5);
  EXPECT_EQ(unexpected_bytes(run, 2, topk_bytes(100.0, 0, 2)), "");
}

TEST(TopkRuns, RatioOutsideZeroToHundredIsRefused) {
  for (const char* ratio : {"0", "150"}) {
    const TrainingRun run = train_tiny(TinyModel::Gpt2, 1, "topk", {std::string("strategy.ratio_percent=") + ratio}, 2);
    EXPECT_NE(run.result.exit_code, 0);
    EXPECT_NE(
        run.result.output.find(std::string("strategy 'topk': ratio_percent is ") + ratio + " but must be in (0, 100]"),
        std::string::npos)
        << run.result.output;
  }
}

}  // namespace
}  // namespace gradsweep::test
