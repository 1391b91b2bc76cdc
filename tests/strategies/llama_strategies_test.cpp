// Llama in real `gradsweep train` jobs beyond the shared equivalence suites: fsdp over its per-block units
// reproduces `single`, the fused grouped-query attention trains as the explicit kernel to fp32 rounding,
// and a tied head trains under ring as under single.
#include "strategies/strategy_runs.hpp"

#include <gtest/gtest.h>

namespace gradsweep::test {
namespace {

void expect_matches(const TrainingRun& run, const TrainingRun& reference) {
  ASSERT_EQ(run.result.exit_code, 0) << run.result.output;
  ASSERT_EQ(reference.result.exit_code, 0) << reference.result.output;
  ASSERT_EQ(run.steps.size(), 20u);
  EXPECT_LT(max_relative_difference(run.losses(), reference.losses()), 1e-5);
  EXPECT_LT(run.losses().back(), run.losses().front() - 0.5);
}

TEST(LlamaStrategies, FsdpOverItsBlocksMatchesSingle) {
  const TrainingRun run = train_tiny(TinyModel::Llama, 2, "fsdp");
  expect_matches(run, single_reference(TinyModel::Llama));
  EXPECT_EQ(run.log(0).find("declares no units"), std::string::npos) << run.log(0);
}

TEST(LlamaStrategies, FusedAttentionTrainsAsTheExplicitKernel) {
  const TrainingRun fused = train_tiny(TinyModel::Llama, 1, "single", {"model.attention=fused"});
  const TrainingRun explicit_kernel = train_tiny(TinyModel::Llama, 1, "single", {"model.attention=explicit"});
  expect_matches(fused, explicit_kernel);
  EXPECT_NE(fused.losses(), explicit_kernel.losses()) << "two kernels: close, not bit-identical";
}

TEST(LlamaStrategies, TiedHeadUnderRingMatchesSingle) {
  const std::vector<std::string> tied = {"model.tie_embeddings=true"};
  expect_matches(train_tiny(TinyModel::Llama, 2, "ring", tied), single_reference(TinyModel::Llama, 20, tied));
}

}  // namespace
}  // namespace gradsweep::test
