// `sampled` (sampled softmax + row-sparse exchange) in real `gradsweep train` processes, on the
// word-level corpus (vocabulary 2000) where a step touches only some rows of the embedding and output
// matrices.
#include "strategies/strategy_runs.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace gradsweep::test {
namespace {

constexpr int kSteps = 12;
const std::vector<std::string> kSampled{"strategy.negatives=200"};
// The tiny LSTM learns words slowly at the suite's default rate; this one makes 20 steps show it.
const std::string kFasterRate = "train.lr=2e-2";

// Bytes rank r sent over the whole run, from the host's counters.
double bytes_sent(const TrainingRun& run, int rank) {
  double total = 0;
  for (const auto& s : run.steps) total += s.at("ranks").at("bytes_sent")[static_cast<std::size_t>(rank)].get<double>();
  return total;
}

TEST(Sampled, SparseRowExchangeTrainsExactlyAsTheDenseExchangeOfTheSameGradients) {
  const TrainingRun sparse = train_tiny(TinyModel::LstmWords, 2, "sampled", kSampled, kSteps);
  const TrainingRun dense =
      train_tiny(TinyModel::LstmWords, 2, "sampled", with(kSampled, {"strategy.exchange=dense"}), kSteps);
  ASSERT_EQ(sparse.result.exit_code, 0) << sparse.result.output;
  ASSERT_EQ(dense.result.exit_code, 0) << dense.result.output;
  // Two ranks: each element's sum is a + b either way, so the parameters, and with them every loss, are
  // bit-identical.
  EXPECT_EQ(sparse.losses(), dense.losses());
  EXPECT_EQ(sparse.summary.at("val_loss").get<double>(), dense.summary.at("val_loss").get<double>());
  const auto& plugin = sparse.steps.back().at("plugin");
  EXPECT_LT(plugin.at("gradient_bytes").get<double>(), plugin.at("dense_gradient_bytes").get<double>() / 2.5);
  EXPECT_LT(bytes_sent(sparse, 0), bytes_sent(dense, 0) / 2.5);
}

TEST(Sampled, TwoRanksTrainAndMoveFewerBytesThanRing) {
  const TrainingRun sampled = train_tiny(TinyModel::LstmWords, 2, "sampled", with(kSampled, {kFasterRate}), 20);
  const TrainingRun ring = train_tiny(TinyModel::LstmWords, 2, "ring", {kFasterRate}, 20);
  ASSERT_EQ(sampled.result.exit_code, 0) << sampled.result.output;
  ASSERT_EQ(ring.result.exit_code, 0) << ring.result.output;
  const auto losses = sampled.losses();
  EXPECT_LT(losses.back(), losses.front() - 0.5);
  // Evaluation is the full softmax, so it compares with ring's directly; 20 steps are few: only sanity.
  EXPECT_LT(sampled.summary.at("val_loss").get<double>(), std::log(2000.0));
  for (int rank : {0, 1}) EXPECT_LT(bytes_sent(sampled, rank), bytes_sent(ring, rank) / 2.5) << "rank " << rank;
  EXPECT_GT(sampled.steps.back().at("plugin").at("sampled_vocabulary").get<double>(), 200);
}

TEST(Sampled, NegativesCoveringTheVocabularyReproduceSingle) {
  // All words scored, none estimated: the loss is the full softmax's, up to summation order.
  // A peak of 1 FLOP/s puts both MFUs far above 1: the flag says why, by what each strategy trained.
  const std::string tiny_peak = "metrics.peak_flops=1";
  const TrainingRun sampled =
      train_tiny(TinyModel::LstmWords, 1, "sampled", {"strategy.negatives=2000", tiny_peak}, kSteps);
  const TrainingRun single = train_tiny(TinyModel::LstmWords, 1, "single", {tiny_peak}, kSteps);
  ASSERT_EQ(sampled.result.exit_code, 0) << sampled.result.output;
  ASSERT_EQ(single.result.exit_code, 0) << single.result.output;
  EXPECT_LT(max_relative_difference(sampled.losses(), single.losses()), 1e-4);
  EXPECT_EQ(sampled.steps.back().at("plugin").at("sampled_vocabulary").get<double>(), 2000);
  EXPECT_EQ(sampled.summary.at("mfu_flag"), "above peak: FLOPs count the whole vocabulary");
  EXPECT_EQ(sampled.summary.at("restricts_vocabulary"), true);
  EXPECT_EQ(single.summary.at("mfu_flag"), "above peak: peak underestimated");
  EXPECT_EQ(single.summary.at("restricts_vocabulary"), false);
}

TEST(Sampled, ParameterServerAnswersByRowsExactlyAsDenseAnswers) {
  // Plain SGD is row-local (a row without gradient stays put), so the server answers with rows only.
  const std::vector<std::string> ps{"strategy.transport=ps", "strategy.mode=sync",   "train.optimizer=sgd",
                                    "train.momentum=0",      "train.weight_decay=0", "train.lr=0.5"};
  const TrainingRun sparse = train_tiny(TinyModel::LstmWords, 4, "sampled", with(kSampled, ps), kSteps);
  const TrainingRun dense =
      train_tiny(TinyModel::LstmWords, 4, "sampled", with(with(kSampled, ps), {"strategy.exchange=dense"}), kSteps);
  ASSERT_EQ(sparse.result.exit_code, 0) << sparse.result.output;
  ASSERT_EQ(dense.result.exit_code, 0) << dense.result.output;
  EXPECT_EQ(sparse.losses(), dense.losses());
  const auto& plugin = sparse.steps.back().at("plugin");
  EXPECT_LT(plugin.at("ps_pull_bytes_per_worker").get<double>(),
            dense.steps.back().at("plugin").at("ps_pull_bytes_per_worker").get<double>() / 2.5);
  EXPECT_LT(bytes_sent(sparse, 0), bytes_sent(dense, 0) / 2.5);
}

TEST(Sampled, AsyncParameterServerTrainsAndRecordsStaleness) {
  const TrainingRun run = train_tiny(TinyModel::LstmWords, 4, "sampled",
                                     with(kSampled, {"strategy.transport=ps", "strategy.mode=async", kFasterRate}), 20);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.output;
  EXPECT_LT(run.losses().back(), run.losses().front() - 0.5);
  EXPECT_TRUE(run.steps.back().at("plugin").contains("staleness_mean"));
}

TEST(Sampled, BadConfigurationIsRefusedWithTheReason) {
  const auto refused = [](const std::vector<std::string>& overrides, const std::string& reason) {
    const TrainingRun run = train_tiny(TinyModel::LstmWords, 1, "sampled", overrides, 1);
    EXPECT_NE(run.result.exit_code, 0) << run.result.output;
    EXPECT_NE(run.result.output.find(reason), std::string::npos) << run.result.output;
  };
  refused({"strategy.negatives=-1"}, "negatives -1 must be in [0, vocab_size 2000]");
  refused({"strategy.negatives=2001"}, "negatives 2001 must be in [0, vocab_size 2000]");
  // Choices are the host's to check (the plugin declares them): the key, the value, the allowed list.
  refused({"strategy.transport=tcp"}, "strategy.transport: 'tcp' is not one of ring, ps");
  refused({"strategy.distribution=zipf"}, "strategy.distribution: 'zipf' is not one of unigram, uniform");
}

TEST(Sampled, AModelWithoutOutputRestrictionIsRefused) {
  ::setenv("GRADSWEEP_PLUGIN_PATH", GRADSWEEP_TEST_STRATEGY_PLUGINS, 1);
  const TrainingRun run = train_tiny(TinyModel::BigramWords, 1, "sampled", {}, 1);
  ::unsetenv("GRADSWEEP_PLUGIN_PATH");
  EXPECT_NE(run.result.exit_code, 0);
  EXPECT_NE(run.result.output.find("needs a model that can restrict its softmax"), std::string::npos)
      << run.result.output;
}

}  // namespace
}  // namespace gradsweep::test
