// Dropout does not break equivalence: masks are keyed by (seed, step, global sample index), so ring and
// dps at 2 and 3 ranks, and `single` with any micro-batch size, reproduce `single` at every step (and
// the validation loss) as tightly as without dropout. Before keyed dropout, 3 ranks differed from
// `single` from step 0 and micro_batch 4 from micro_batch 2 by about 1e-2.
#include "strategies/strategy_runs.hpp"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

namespace gradsweep::test {
namespace {

// Global batch 12 splits over 1, 2, 3 and 4 ranks; micro_batch 2 gives every rank several micro-batches.
// The LSTM gets two layers, so the dropout between layers is exercised too.
std::vector<std::string> dropout_cell(TinyModel model, const std::string& micro_batch = "2") {
  std::vector<std::string> overrides{"model.dropout=0.1", "train.batch_size=12", "train.micro_batch=" + micro_batch};
  if (model == TinyModel::Lstm) overrides.push_back("model.n_layer=2");
  return overrides;
}

double val_loss(const TrainingRun& run) { return run.summary.at("val_loss").get<double>(); }

class DropoutEquivalence : public ::testing::TestWithParam<std::tuple<TinyModel, int, const char*>> {};

TEST_P(DropoutEquivalence, LossMatchesSingleAtEveryStep) {
  const auto [model, ranks, strategy] = GetParam();
  const TrainingRun& reference = single_reference(model, 20, dropout_cell(model));
  const TrainingRun run = train_tiny(model, ranks, strategy, dropout_cell(model));
  ASSERT_EQ(run.result.exit_code, 0) << run.result.output;
  ASSERT_EQ(run.steps.size(), 20u);
  EXPECT_LT(max_relative_difference(run.losses(), reference.losses()), 1e-5);
  EXPECT_NEAR(val_loss(run), val_loss(reference), 1e-5 * val_loss(reference));
  EXPECT_LT(run.losses().back(), run.losses().front());
}

INSTANTIATE_TEST_SUITE_P(Strategies, DropoutEquivalence,
                         ::testing::Combine(::testing::Values(TinyModel::Gpt2, TinyModel::Llama, TinyModel::Lstm),
                                            ::testing::Values(2, 3), ::testing::Values("ring", "dps")),
                         [](const auto& info) {
                           return name_of(std::get<0>(info.param)) + "_" + std::to_string(std::get<1>(info.param)) +
                                  "ranks_" + std::get<2>(info.param);
                         });

class DropoutMicroBatches : public ::testing::TestWithParam<TinyModel> {};

// One rank, the same global batch of 12 cut into micro-batches of 2, 4 or 12: the same losses. And the
// dropout is real: without it the losses are different.
TEST_P(DropoutMicroBatches, AnyMicroBatchSizeGivesTheSameLosses) {
  const TinyModel model = GetParam();
  const TrainingRun& reference = single_reference(model, 20, dropout_cell(model));
  for (const std::string micro : {"4", "12"}) {
    const TrainingRun run = train_tiny(model, 1, "single", dropout_cell(model, micro));
    ASSERT_EQ(run.result.exit_code, 0) << run.result.output;
    EXPECT_LT(max_relative_difference(run.losses(), reference.losses()), 1e-5) << "micro_batch " << micro;
    EXPECT_NEAR(val_loss(run), val_loss(reference), 1e-5 * val_loss(reference)) << "micro_batch " << micro;
  }
  std::vector<std::string> no_dropout = dropout_cell(model);
  no_dropout[0] = "model.dropout=0";
  const TrainingRun plain = train_tiny(model, 1, "single", no_dropout);
  ASSERT_EQ(plain.result.exit_code, 0) << plain.result.output;
  EXPECT_GT(max_relative_difference(plain.losses(), reference.losses()), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Models, DropoutMicroBatches,
                         ::testing::Values(TinyModel::Gpt2, TinyModel::Llama, TinyModel::Lstm),
                         [](const auto& info) { return name_of(info.param); });

}  // namespace
}  // namespace gradsweep::test
