// The lstm_lm plugin: parameter layout, presets, weight tying, FLOPs, options and their errors.
// Behaviour shared with gpt2 (loss, gradients, causality, output subsets) is in lm_contract_test.cpp.
#include "model_test_helpers.hpp"

#include <gtest/gtest.h>

namespace gradsweep::test::models {
namespace {

using Shape = std::vector<std::int64_t>;

TEST(LstmLm, TinyParametersHaveStableNamesShapesAndSparsity) {
  const auto model = load_model("lstm_lm", "preset: lstm-tiny");
  const auto params = model->parameters();
  struct Expected {
    const char* name;
    Shape shape;
    bool row_sparse;
  };
  // V=256, E=32, H=64, one layer; LSTM gates stacked as 4H rows.
  const std::vector<Expected> expected = {
      {"embedding.weight", {256, 32}, true},   {"lstm.weight_ih_l0", {256, 32}, false},
      {"lstm.weight_hh_l0", {256, 64}, false}, {"lstm.bias_ih_l0", {256}, false},
      {"lstm.bias_hh_l0", {256}, false},       {"output.weight", {256, 64}, true},
      {"output.bias", {256}, false},
  };
  ASSERT_EQ(params.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(params[i].name, expected[i].name) << "at " << i;
    EXPECT_EQ(params[i].tensor.sizes(), expected[i].shape) << params[i].name;
    EXPECT_EQ(params[i].row_sparse, expected[i].row_sparse) << params[i].name;
  }
  const auto info = model->info();
  EXPECT_EQ(info.architecture, "lstm_lm");
  EXPECT_EQ(info.num_parameters, 49'920);
  EXPECT_EQ(info.vocab_size, 256);
  EXPECT_EQ(info.block_size, 0);
  EXPECT_TRUE(info.supports_output_subset);
  // Output bias starts at zero; both token matrices ~ U(-0.1, 0.1).
  EXPECT_EQ(find_parameter(params, "output.bias").tensor.abs().max().item<double>(), 0.0);
  EXPECT_LE(find_parameter(params, "embedding.weight").tensor.abs().max().item<double>(), 0.1);
  EXPECT_GT(find_parameter(params, "output.weight").tensor.abs().max().item<double>(), 0.09);
}

TEST(LstmLm, OutputShapeFollowsTheBatch) {
  const auto model = load_model("lstm_lm", "preset: lstm-tiny");
  // Any sequence length: block_size is 0. The loss is a 0-dim float32 tensor.
  for (std::int64_t T : {1, 7, 300}) {
    const auto loss = model->loss(random_batch(3, T, 256));
    EXPECT_EQ(loss.dim(), 0);
    EXPECT_EQ(loss.scalar_type(), torch::kFloat);
  }
}

TEST(LstmLm, Xiao2017PresetIsTwoUntiedLayersOf512) {
  const auto model = load_model("lstm_lm", "preset: lstm-xiao2017");
  const auto params = model->parameters();
  EXPECT_EQ(model->info().num_parameters, 14'452'496);
  EXPECT_EQ(model->info().vocab_size, 10000);
  EXPECT_EQ(find_parameter(params, "lstm.weight_ih_l1").tensor.sizes(), (Shape{2048, 512}));
  EXPECT_EQ(find_parameter(params, "output.weight").tensor.sizes(), (Shape{10000, 512}));
  // 6 x (LSTM 4,202,496 + output matrix 5,120,000 + output bias 10,000); the embedding is a lookup.
  EXPECT_DOUBLE_EQ(model->flops_per_token(35), 6.0 * (4'202'496 + 5'120'000 + 10'000));
  EXPECT_DOUBLE_EQ(model->flops_per_token(1), model->flops_per_token(1000));
  EXPECT_EQ(load_model("lstm_lm", "preset: lstm-small-cpu")->info().num_parameters, 6'182'672);
}

TEST(LstmLm, TiedWeightsShareTheEmbedding) {
  torch::manual_seed(3);
  const auto tied = load_model("lstm_lm", "preset: lstm-tiny\nemb_dim: 64\ntie_weights: true");
  const auto params = tied->parameters();
  for (const auto& p : params) EXPECT_NE(p.name, "output.weight");
  EXPECT_EQ(params.back().name, "output.bias");
  // Untied, the same sizes would add a (256,64) output matrix.
  const auto untied = load_model("lstm_lm", "preset: lstm-tiny\nemb_dim: 64");
  EXPECT_EQ(untied->info().num_parameters - tied->info().num_parameters, 256 * 64);
  // The output matrix is counted in FLOPs either way.
  EXPECT_DOUBLE_EQ(tied->flops_per_token(10), untied->flops_per_token(10));

  // Inputs and targets from the first half of the vocabulary: the other half's embedding rows get a
  // gradient only if the embedding is the softmax matrix.
  sdk::Batch batch{torch::randint(128, {2, 12}, torch::kLong), torch::randint(128, {2, 12}, torch::kLong)};
  tied->loss(batch).backward();
  const auto tied_grad = find_parameter(params, "embedding.weight").tensor.grad();
  ASSERT_TRUE(tied_grad.defined());
  EXPECT_TRUE(tied_grad.slice(0, 128, 256).abs().sum(1).gt(0).all().item<bool>());

  const auto untied_params = untied->parameters();
  untied->loss(batch).backward();
  const auto untied_grad = find_parameter(untied_params, "embedding.weight").tensor.grad();
  EXPECT_EQ(untied_grad.slice(0, 128, 256).abs().max().item<double>(), 0.0);
  EXPECT_TRUE(find_parameter(untied_params, "output.weight")
                  .tensor.grad()
                  .slice(0, 128, 256)
                  .abs()
                  .sum(1)
                  .gt(0)
                  .all()
                  .item<bool>());
}

TEST(LstmLm, TyingNeedsEqualWidths) {
  const std::string message = error_of([] { load_model("lstm_lm", "preset: lstm-tiny\ntie_weights: true"); });
  EXPECT_TRUE(contains(message, "tie_weights")) << message;
  EXPECT_TRUE(contains(message, "emb_dim")) << message;
  EXPECT_TRUE(contains(message, "hidden_dim")) << message;
}

TEST(LstmLm, OptionErrorsNameTheProblem) {
  const std::string unknown = error_of([] { load_model("lstm_lm", "preset: lstm-huge"); });
  EXPECT_TRUE(contains(unknown, "lstm-huge")) << unknown;
  for (const char* known : {"lstm-tiny", "lstm-xiao2017", "lstm-small-cpu"})
    EXPECT_TRUE(contains(unknown, known)) << unknown;

  const std::string missing = error_of([] { load_model("lstm_lm", "vocab_size: 10\nemb_dim: 4\nhidden_dim: 4"); });
  EXPECT_TRUE(contains(missing, "n_layer")) << missing;
  EXPECT_TRUE(contains(error_of([] { load_model("lstm_lm", "preset: lstm-tiny\nhidden_dim: -1"); }), "hidden_dim"));
}

TEST(LstmLm, SizesOverrideThePreset) {
  const auto model = load_model("lstm_lm", "preset: lstm-tiny\nn_layer: 3\nvocab_size: 40");
  const auto params = model->parameters();
  EXPECT_EQ(find_parameter(params, "lstm.weight_ih_l2").tensor.sizes(), (Shape{256, 64}));
  EXPECT_EQ(find_parameter(params, "output.weight").tensor.sizes(), (Shape{40, 64}));
  EXPECT_EQ(model->info().vocab_size, 40);
}

}  // namespace
}  // namespace gradsweep::test::models
