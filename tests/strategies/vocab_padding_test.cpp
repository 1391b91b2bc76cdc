// GPT-2 with its vocabulary padded (model.vocab_multiple) in real `gradsweep train` runs: it trains as the
// unpadded model to fp32 rounding over 20 steps, and a synchronous strategy still reproduces `single`.
#include "strategies/strategy_runs.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gradsweep::test {
namespace {

// 300 ids: the byte corpus's tokens all fit, and 300 is no multiple of 128, so the default pads to 384.
const std::vector<std::string> kPadded = {"model.vocab_size=300"};
const std::vector<std::string> kPlain = {"model.vocab_size=300", "model.vocab_multiple=1"};

TEST(Gpt2VocabPadding, TrainsAsTheUnpaddedModelToFp32Rounding) {
  const TrainingRun padded = train_tiny(TinyModel::Gpt2, 1, "single", kPadded);
  const TrainingRun plain = train_tiny(TinyModel::Gpt2, 1, "single", kPlain);
  ASSERT_EQ(padded.result.exit_code, 0) << padded.result.output;
  ASSERT_EQ(plain.result.exit_code, 0) << plain.result.output;
  ASSERT_EQ(padded.steps.size(), 20u);
  EXPECT_LT(max_relative_difference(padded.losses(), plain.losses()), 1e-5);
  EXPECT_LT(padded.losses().back(), padded.losses().front() - 0.5);
  EXPECT_NE(padded.result.output.find("wte padded to 384 rows"), std::string::npos) << padded.result.output;
  EXPECT_EQ(plain.result.output.find("wte padded"), std::string::npos) << plain.result.output;
}

TEST(Gpt2VocabPadding, RingAtTwoRanksReproducesSingle) {
  const TrainingRun single = train_tiny(TinyModel::Gpt2, 1, "single", kPadded);
  const TrainingRun ring = train_tiny(TinyModel::Gpt2, 2, "ring", kPadded);
  ASSERT_EQ(single.result.exit_code, 0) << single.result.output;
  ASSERT_EQ(ring.result.exit_code, 0) << ring.result.output;
  EXPECT_LT(max_relative_difference(ring.losses(), single.losses()), 1e-5);
}

}  // namespace
}  // namespace gradsweep::test
