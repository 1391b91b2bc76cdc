// What every model plugin promises the trainer, checked on each model's tiny preset: the loss at
// initialisation, gradients, causality, dropout switching, seeding, autocast, and the output subset
// (sampled softmax) semantics.
#include "model_test_helpers.hpp"
#include "train/autocast_scope.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <ostream>

namespace gradsweep::test::models {
namespace {

struct ModelCase {
  const char* plugin;
  const char* options;       // a tiny preset, vocabulary 256
  const char* token_matrix;  // the (V,*) matrix the softmax uses
};
// Failure messages name the plugin rather than dumping the struct's bytes.
void PrintTo(const ModelCase& c, std::ostream* os) { *os << c.plugin; }

class LmContract : public ::testing::TestWithParam<ModelCase> {
 protected:
  static constexpr std::int64_t kVocab = 256;
  std::shared_ptr<LoadedModel> load(const std::string& extra = "") {
    return load_model(GetParam().plugin, std::string(GetParam().options) + extra);
  }
};

TEST_P(LmContract, LossAtInitialisationIsNearUniform) {
  torch::manual_seed(11);
  const auto model = load();
  const auto loss = model->loss(random_batch(4, 32, kVocab));
  EXPECT_EQ(loss.dim(), 0);
  EXPECT_EQ(loss.scalar_type(), torch::kFloat);
  EXPECT_NEAR(value(loss), std::log(static_cast<double>(kVocab)), 0.3);
}

TEST_P(LmContract, EveryParameterGetsAGradient) {
  torch::manual_seed(12);
  const auto model = load();
  model->loss(random_batch(4, 32, kVocab)).backward();
  for (const auto& p : model->parameters()) {
    ASSERT_TRUE(p.tensor.grad().defined()) << p.name;
    EXPECT_TRUE(torch::isfinite(p.tensor.grad()).all().item<bool>()) << p.name;
    EXPECT_GT(p.tensor.grad().abs().sum().item<double>(), 0.0) << p.name;
  }
}

// Position t's prediction may depend on inputs 0..t only. For a cut k, targets from k on are ignored
// (-100), so the loss covers positions 0..k-1; changing input k must leave it exactly as it was. Were
// any earlier position able to see position k (a wrong or missing mask), the loss would move.
TEST_P(LmContract, PredictionsDoNotSeeTheFuture) {
  torch::manual_seed(13);
  const auto model = load();
  const std::int64_t T = 24;
  const auto batch = random_batch(3, T, kVocab);
  for (std::int64_t k : {std::int64_t{1}, T / 2, T - 1}) {
    sdk::Batch cut{batch.inputs, batch.targets.clone()};
    cut.targets.slice(1, k, T).fill_(-100);
    const double base = value(model->loss(cut));

    sdk::Batch changed{batch.inputs.clone(), cut.targets};
    changed.inputs.select(1, k).add_(1).remainder_(kVocab);
    EXPECT_NEAR(value(model->loss(changed)), base, 1e-6) << "input " << k << " leaked into earlier positions";

    // The same loss comes from the prefix alone: ignored targets drop out of the mean.
    sdk::Batch prefix{batch.inputs.slice(1, 0, k).contiguous(), batch.targets.slice(1, 0, k).contiguous()};
    EXPECT_NEAR(value(model->loss(prefix)), base, 1e-5) << "cut at " << k;
  }
  // The loss does respond to an input that the scored positions may see.
  sdk::Batch changed_first{batch.inputs.clone(), batch.targets};
  changed_first.inputs.select(1, 0).add_(1).remainder_(kVocab);
  EXPECT_GT(std::abs(value(model->loss(changed_first)) - value(model->loss(batch))), 1e-5);
}

TEST_P(LmContract, TrainModeTogglesDropout) {
  torch::manual_seed(14);
  const auto model = load("\ndropout: 0.5");
  const auto batch = random_batch(2, 16, kVocab);
  model->set_training(true);
  EXPECT_NE(value(model->loss(batch)), value(model->loss(batch)));
  model->set_training(false);
  EXPECT_EQ(value(model->loss(batch)), value(model->loss(batch)));
}

// With a keyed batch (SDK 1.3) a sample's dropout depends on (seed, step, sample index) only: the loss of
// four samples is the mean of the losses of its two halves, each passed with its own indices, and the
// global generator plays no part. n_layer 2 puts the LSTM's dropout between layers to the test too.
TEST_P(LmContract, KeyedDropoutDependsOnTheSampleNotOnTheBatch) {
  torch::manual_seed(15);
  const auto model = load("\ndropout: 0.3\nn_layer: 2");
  const auto tokens = random_batch(4, 16, kVocab);
  auto keyed = [&](std::int64_t from, std::int64_t to, std::int64_t step) {
    sdk::Batch b{tokens.inputs.slice(0, from, to), tokens.targets.slice(0, from, to)};
    b.sample_ids = torch::arange(from, to, torch::kLong);
    b.step = step;
    b.seed = 7;
    return b;
  };
  model->set_training(true);
  const double whole = value(model->loss(keyed(0, 4, 3)));
  torch::manual_seed(99);  // would change torch::dropout's masks
  EXPECT_EQ(whole, value(model->loss(keyed(0, 4, 3))));
  const double halves = (value(model->loss(keyed(0, 2, 3))) + value(model->loss(keyed(2, 4, 3)))) / 2;
  EXPECT_NEAR(whole, halves, 1e-6 * whole);
  EXPECT_GT(std::abs(whole - value(model->loss(keyed(0, 4, 4)))), 1e-4);  // another step, other masks
  model->set_training(false);
  EXPECT_GT(std::abs(whole - value(model->loss(keyed(0, 4, 3)))), 1e-4);  // dropout was on
}

// The host seeds torch's global generator before creating a model; the model must draw its weights
// from it (not reseed, not draw from elsewhere).
TEST_P(LmContract, WeightsFollowTheHostsSeed) {
  torch::manual_seed(5);
  const auto a = load()->parameters();
  torch::manual_seed(5);
  const auto b = load()->parameters();
  torch::manual_seed(6);
  const auto c = load()->parameters();
  ASSERT_EQ(a.size(), b.size());
  bool any_differs = false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_TRUE(a[i].tensor.equal(b[i].tensor)) << a[i].name;
    any_differs = any_differs || !a[i].tensor.equal(c[i].tensor);
  }
  EXPECT_TRUE(any_differs);
}

TEST_P(LmContract, AutocastLossIsFloat32AndClose) {
  torch::manual_seed(15);
  const auto model = load();
  const auto batch = random_batch(2, 16, kVocab);
  const double full_precision = value(model->loss(batch));
  torch::Tensor mixed;
  {
    train::AutocastScope autocast(torch::kCPU, torch::kBFloat16);
    mixed = model->loss(batch);
  }
  EXPECT_EQ(mixed.scalar_type(), torch::kFloat);
  EXPECT_NEAR(value(mixed), full_precision, 0.05);
}

// ---- output subset ------------------------------------------------------------------------------

TEST_P(LmContract, SubsetOfEveryRowEqualsFullLoss) {
  torch::manual_seed(21);
  const auto model = load();
  const auto batch = random_batch(3, 20, kVocab);
  const sdk::OutputSubset all{torch::arange(kVocab, torch::kLong), batch.targets, {}};
  EXPECT_NEAR(value(model->loss(batch, &all)), value(model->loss(batch)), 1e-5);
  // In any order: with rows[j] = V-1-j, token id y sits at index V-1-y.
  const sdk::OutputSubset reversed{torch::arange(kVocab - 1, -1, -1, torch::kLong), (kVocab - 1) - batch.targets, {}};
  EXPECT_NEAR(value(model->loss(batch, &reversed)), value(model->loss(batch)), 1e-5);
}

// One position, two candidate rows {a, b}, target a: loss = softplus((z_b - q_b) - (z_a - q_a)). The run
// without log_q gives d = z_b - z_a; with log_q = (0, q) the loss must be softplus(d - q).
TEST_P(LmContract, LogQIsSubtractedFromTheLogits) {
  torch::manual_seed(23);
  const auto model = load();
  const sdk::Batch one{torch::tensor({{17}}, torch::kLong), torch::tensor({{40}}, torch::kLong)};
  const auto rows = torch::tensor({40, 99}, torch::kLong);
  const auto target = torch::zeros({1, 1}, torch::kLong);
  const sdk::OutputSubset plain_subset{rows, target, {}};
  const double plain = value(model->loss(one, &plain_subset));
  const double d = std::log(std::expm1(plain));  // softplus^-1
  const float q = 1.5f;
  const sdk::OutputSubset corrected_subset{rows, target, torch::tensor({0.0f, q})};
  const double corrected = value(model->loss(one, &corrected_subset));
  EXPECT_NEAR(corrected, std::log1p(std::exp(d - q)), 1e-5);
  // A constant shift of every row's log_q changes nothing (softmax is shift-invariant).
  const sdk::OutputSubset shifted_subset{rows, target, torch::tensor({3.0f, q + 3.0f})};
  const double shifted = value(model->loss(one, &shifted_subset));
  EXPECT_NEAR(shifted, corrected, 1e-5);
}

// Only the sampled rows of the softmax matrix (and the input tokens' embedding rows) get a gradient.
TEST_P(LmContract, SubsetGradientTouchesOnlyItsRows) {
  torch::manual_seed(24);
  const auto model = load();
  const auto params = model->parameters();
  // Inputs from [0, 64); the subset is rows [64, 96); targets index into it.
  sdk::Batch batch{torch::randint(64, {2, 16}, torch::kLong), torch::randint(64, 96, {2, 16}, torch::kLong)};
  const sdk::OutputSubset subset{torch::arange(64, 96, torch::kLong), batch.targets - 64, {}};
  model->loss(batch, &subset).backward();
  const auto grad = find_parameter(params, GetParam().token_matrix).tensor.grad();
  ASSERT_TRUE(grad.defined());
  EXPECT_TRUE(grad.slice(0, 64, 96).abs().sum(1).gt(0).all().item<bool>());
  EXPECT_EQ(grad.slice(0, 96, kVocab).abs().max().item<double>(), 0.0);
}

TEST_P(LmContract, MalformedSubsetIsRefused) {
  const auto model = load();
  const auto batch = random_batch(2, 8, kVocab);
  const sdk::OutputSubset wrong_targets{torch::arange(10, torch::kLong), torch::zeros({2, 7}, torch::kLong), {}};
  EXPECT_TRUE(contains(error_of([&] { model->loss(batch, &wrong_targets); }), "targets"));
  const sdk::OutputSubset wrong_log_q{torch::arange(10, torch::kLong), torch::zeros({2, 8}, torch::kLong),
                                      torch::zeros({9})};
  EXPECT_TRUE(contains(error_of([&] { model->loss(batch, &wrong_log_q); }), "log_q"));
}

INSTANTIATE_TEST_SUITE_P(Tiny, LmContract,
                         ::testing::Values(ModelCase{"gpt2", "preset: gpt2-tiny", "wte.weight"},
                                           ModelCase{"llama", "preset: llama-tiny", "lm_head.weight"},
                                           ModelCase{"lstm_lm", "preset: lstm-tiny", "output.weight"}),
                         [](const ::testing::TestParamInfo<ModelCase>& info) {
                           return std::string(info.param.plugin);
                         });

}  // namespace
}  // namespace gradsweep::test::models
