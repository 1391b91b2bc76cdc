// GPT-2's fused attention (scaled_dot_product_attention, the default) against the explicit matmul, mask
// and softmax it replaced, in real `gradsweep train` runs on the CPU: the same losses to fp32 rounding over
// 20 steps, and, with dropout, the keyed path in both, so the losses are the same to the bit.
#include "strategies/strategy_runs.hpp"

#include <gtest/gtest.h>

namespace gradsweep::test {
namespace {

TEST(Gpt2Attention, FusedTrainsAsTheExplicitKernelToFp32Rounding) {
  const TrainingRun fused = train_tiny(TinyModel::Gpt2, 1, "single", {"model.attention=fused"});
  const TrainingRun explicit_kernel = train_tiny(TinyModel::Gpt2, 1, "single", {"model.attention=explicit"});
  ASSERT_EQ(fused.result.exit_code, 0) << fused.result.output;
  ASSERT_EQ(explicit_kernel.result.exit_code, 0) << explicit_kernel.result.output;
  ASSERT_EQ(fused.steps.size(), 20u);
  EXPECT_LT(max_relative_difference(fused.losses(), explicit_kernel.losses()), 1e-5);
  EXPECT_LT(fused.losses().back(), fused.losses().front() - 0.5);
  // Different kernels: the losses are close, not bit-identical (else this test would compare a path with
  // itself).
  EXPECT_NE(fused.losses(), explicit_kernel.losses());
}

TEST(Gpt2Attention, DropoutRunsTheKeyedKernelWhateverTheChoice) {
  const TrainingRun fused = train_tiny(TinyModel::Gpt2, 1, "single", {"model.attention=fused", "model.dropout=0.1"});
  const TrainingRun explicit_kernel =
      train_tiny(TinyModel::Gpt2, 1, "single", {"model.attention=explicit", "model.dropout=0.1"});
  ASSERT_EQ(fused.result.exit_code, 0) << fused.result.output;
  ASSERT_EQ(explicit_kernel.result.exit_code, 0) << explicit_kernel.result.output;
  EXPECT_EQ(fused.losses(), explicit_kernel.losses());
}

TEST(Gpt2Attention, AnUnknownKernelIsRefusedByName) {
  const TrainingRun run = train_tiny(TinyModel::Gpt2, 1, "single", {"model.attention=flash"}, 1);
  EXPECT_EQ(run.result.exit_code, 2) << run.result.output;
  EXPECT_NE(run.result.output.find("attention 'flash' is not one of fused, explicit"), std::string::npos)
      << run.result.output;
}

}  // namespace
}  // namespace gradsweep::test
