// The -amp variants: bf16 autocast on CPU, 16-bit gradients on the wire, and loss scaling that skips an
// overflowing step on every rank at once.
#include "strategies/strategy_runs.hpp"

#include <gtest/gtest.h>
#include <torch/version.h>

#include <iostream>
#include <regex>

namespace gradsweep::test {
namespace {

class MixedPrecisionVariant : public ::testing::TestWithParam<const char*> {};

// The bound stated in docs/strategies.md. Measured on this cell (largest relative difference of the 20
// step losses from fp32 at 2 ranks): ring-amp 1.34e-4, dps-amp 1.22e-4, ps-amp 1.09e-4; the bound leaves
// about 7x headroom. bf16's own rounding (2^-8) is larger, but the loss averages 256 tokens.
constexpr double kLossTolerance = 1e-3;

TEST_P(MixedPrecisionVariant, FollowsFloat32AndHalvesGradientBytes) {
  const std::string amp = GetParam();
  const std::string plain = amp.substr(0, amp.size() - 4);
  const TrainingRun& reference = single_reference(TinyModel::Gpt2);
  const TrainingRun full = train_tiny(TinyModel::Gpt2, 2, plain);
  const TrainingRun run = train_tiny(TinyModel::Gpt2, 2, amp);
  ASSERT_EQ(full.result.exit_code, 0) << full.result.output;
  ASSERT_EQ(run.result.exit_code, 0) << run.result.output;
  const double from_single = max_relative_difference(run.losses(), reference.losses());
  const double from_plain = max_relative_difference(run.losses(), full.losses());
  std::cout << amp << ": max relative loss difference over 20 steps: from fp32 single " << from_single << ", from fp32 "
            << plain << " at 2 ranks " << from_plain << "\n";
  EXPECT_LT(from_single, kLossTolerance);
  EXPECT_LT(from_plain, kLossTolerance);
  const auto losses = run.losses();
  EXPECT_LT(losses.back(), losses.front() - 1.0);  // falling, by a lot: 5.3 to about 3.5
  // The gradient traffic is half of float32's. ps and dps also move float32 parameters back, so only
  // the worker's push (ps) or the reduce-scatter half (dps) shrinks; ring sends gradients only.
  const double sent_full = full.steps.back().at("ranks").at("bytes_sent")[1].get<double>();
  const double sent_amp = run.steps.back().at("ranks").at("bytes_sent")[1].get<double>();
  EXPECT_NEAR(sent_amp / sent_full, plain == "dps" ? 0.75 : 0.5, 0.01);
}

INSTANTIATE_TEST_SUITE_P(Amp, MixedPrecisionVariant, ::testing::Values("ring-amp", "dps-amp", "ps-amp"),
                         [](const auto& info) {
                           std::string s = info.param;
                           return s.substr(0, s.find('-'));
                         });

class InjectedOverflow : public ::testing::TestWithParam<const char*> {};

// One rank's gradient turns infinite at step 5: every rank skips that update (and only that one), the
// loss scale halves, and training goes on with all ranks still identical.
TEST_P(InjectedOverflow, SkipsExactlyOneStepOnEveryRank) {
  const std::string strategy = GetParam();
  const TrainingRun run = train_tiny(
      TinyModel::Gpt2, 4, strategy,
      {"strategy.loss_scaling=dynamic", "strategy.inject_overflow_step=5", "strategy.inject_overflow_rank=2"}, 12);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.output;
  ASSERT_EQ(run.steps.size(), 12u);
  for (const auto& s : run.steps) {
    const std::int64_t step = s.at("step");
    EXPECT_EQ(s.at("update_applied").get<bool>(), step != 5) << "step " << step;
    EXPECT_EQ(s.at("plugin").at("loss_scale").get<double>(), step < 5 ? 65536.0 : 32768.0) << "step " << step;
  }
  EXPECT_EQ(run.summary.at("skipped_updates"), 1);
  for (int rank = 0; rank < 4; ++rank) {
    const std::string log = run.log(rank);
    EXPECT_TRUE(std::regex_search(log, std::regex("step 5: .*update skipped"))) << "rank " << rank << ":\n" << log;
    EXPECT_EQ(log.find("step 4: "), std::string::npos) << log;
  }
  const auto losses = run.losses();
  EXPECT_LT(losses.back(), losses.front());
}

INSTANTIATE_TEST_SUITE_P(Amp, InjectedOverflow, ::testing::Values("ring-amp", "dps-amp", "ps-amp"),
                         [](const auto& info) {
                           std::string s = info.param;
                           return s.substr(0, s.find('-'));
                         });

// LibTorch 2.x autocasts CPU work to float16 as well as bfloat16: fp16 trains on CPU, with loss scaling
// (auto: on for fp16) and the loss falling.
TEST(MixedPrecisionOptions, Fp16OnCpuTrainsWithLossScaling) {
  const TrainingRun run = train_tiny(TinyModel::Gpt2, 1, "ring-amp", {"strategy.precision=fp16"}, 8);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.output;
  ASSERT_EQ(run.steps.size(), 8u);
  EXPECT_EQ(run.steps.front().at("plugin").at("loss_scale").get<double>(), 65536.0);
  EXPECT_LT(run.losses().back(), run.losses().front());
}

}  // namespace
}  // namespace gradsweep::test
