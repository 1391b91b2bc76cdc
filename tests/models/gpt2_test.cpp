// The gpt2 plugin: sizes of the presets, parameter layout, initialisation, options and their errors.
// Behaviour shared with lstm_lm (loss, gradients, causality, output subsets) is in lm_contract_test.cpp.
#include "model_test_helpers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <set>

namespace gradsweep::test::models {
namespace {

// GPT-2 124M is built once for all the tests that read it (about two seconds and 500 MB). ctest runs each
// test in a process of its own, so they are kept to two.
class Gpt2_124M : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    torch::manual_seed(1234);
    model_ = load_model("gpt2", "preset: gpt2-124m");
  }
  static void TearDownTestSuite() { model_.reset(); }
  static std::shared_ptr<LoadedModel> model_;
};
std::shared_ptr<LoadedModel> Gpt2_124M::model_;

// OpenAI's 124,439,808 parameters with wte's 50257 rows padded to 50304 (vocab_multiple 128), as llm.c
// counts them.
TEST_F(Gpt2_124M, HasLlmcsPaddedParameterCountAndFlops) {
  constexpr std::int64_t kExpected = 124'475'904;
  EXPECT_EQ(count_elements(model_->parameters()), kExpected);
  const auto info = model_->info();
  EXPECT_EQ(info.num_parameters, kExpected);
  EXPECT_EQ(info.architecture, "gpt2");
  EXPECT_EQ(info.vocab_size, 50257);
  EXPECT_EQ(info.block_size, 1024);
  EXPECT_TRUE(info.supports_output_subset);

  // llm.c's FLOPs estimate: 6N + 6 L C T.
  const double expected = 6.0 * 124'475'904.0 + 6.0 * 12 * 768 * 1024;
  EXPECT_DOUBLE_EQ(model_->flops_per_token(1024), expected);
  // The attention term grows with the sequence; the parameter term does not.
  EXPECT_DOUBLE_EQ(model_->flops_per_token(1024) - model_->flops_per_token(512), 6.0 * 12 * 768 * 512);
}

TEST_F(Gpt2_124M, ParameterNamesOrderSparsityAndInitialisation) {
  const auto params = model_->parameters();
  // wte, wpe, 12 per block (ln_1, c_attn, c_proj, ln_2, c_fc, c_proj: weight and bias each), ln_f.
  ASSERT_EQ(params.size(), 2u + 12u * 12u + 2u);
  const std::vector<std::string> first_block = {"wte.weight",
                                                "wpe.weight",
                                                "h.0.ln_1.weight",
                                                "h.0.ln_1.bias",
                                                "h.0.attn.c_attn.weight",
                                                "h.0.attn.c_attn.bias",
                                                "h.0.attn.c_proj.weight",
                                                "h.0.attn.c_proj.bias",
                                                "h.0.ln_2.weight",
                                                "h.0.ln_2.bias",
                                                "h.0.mlp.c_fc.weight",
                                                "h.0.mlp.c_fc.bias",
                                                "h.0.mlp.c_proj.weight",
                                                "h.0.mlp.c_proj.bias",
                                                "h.1.ln_1.weight"};
  for (std::size_t i = 0; i < first_block.size(); ++i) EXPECT_EQ(params[i].name, first_block[i]) << "at " << i;
  EXPECT_EQ(params[params.size() - 3].name, "h.11.mlp.c_proj.bias");
  EXPECT_EQ(params[params.size() - 2].name, "ln_f.weight");
  EXPECT_EQ(params.back().name, "ln_f.bias");

  EXPECT_EQ(params[0].tensor.sizes(), (std::vector<std::int64_t>{50304, 768}));
  EXPECT_EQ(params[1].tensor.sizes(), (std::vector<std::int64_t>{1024, 768}));
  EXPECT_EQ(find_parameter(params, "h.0.attn.c_attn.weight").tensor.sizes(), (std::vector<std::int64_t>{2304, 768}));
  for (const auto& p : params) {
    EXPECT_EQ(p.row_sparse, p.name == "wte.weight") << p.name;
    EXPECT_TRUE(p.tensor.requires_grad()) << p.name;
    EXPECT_EQ(p.name.find("lm_head"), std::string::npos) << "the head must be tied to wte, found " << p.name;
  }

  // GPT-2's initialisation.
  const auto std_of = [&](const std::string& name) { return find_parameter(params, name).tensor.std().item<double>(); };
  EXPECT_NEAR(params[0].tensor.narrow(0, 0, 50257).std().item<double>(), 0.02, 2e-4);
  EXPECT_EQ(params[0].tensor.narrow(0, 50257, 47).abs().max().item<double>(), 0.0) << "padding rows start at zero";
  EXPECT_NEAR(std_of("wpe.weight"), 0.02, 2e-4);
  EXPECT_NEAR(std_of("h.5.attn.c_attn.weight"), 0.02, 2e-4);
  EXPECT_NEAR(std_of("h.5.mlp.c_fc.weight"), 0.02, 2e-4);
  // Residual projections: 0.02 / sqrt(2 * n_layer).
  const double residual = 0.02 / std::sqrt(24.0);
  EXPECT_NEAR(std_of("h.5.attn.c_proj.weight"), residual, 1e-4);
  EXPECT_NEAR(std_of("h.5.mlp.c_proj.weight"), residual, 1e-4);
  for (const auto& p : params) {
    const bool bias = p.name.size() > 5 && p.name.compare(p.name.size() - 5, 5, ".bias") == 0;
    if (bias) {
      EXPECT_EQ(p.tensor.abs().max().item<double>(), 0.0) << p.name;
    }
    if (p.name.find("ln_") != std::string::npos && !bias) {
      EXPECT_TRUE(p.tensor.eq(1.0).all().item<bool>()) << p.name;
    }
  }
}

TEST(Gpt2Presets, BaiPresetHasAbout106MParameters) {
  const auto model = load_model("gpt2", "preset: gpt2-bai-100m");
  // 12 x 768 body (85,054,464 + ln_f 1,536) + wte 26752 (26679 padded to 128) x 768 + wpe 512 x 768.
  EXPECT_EQ(model->info().num_parameters, 105'994'752);
  EXPECT_EQ(count_elements(model->parameters()), 105'994'752);
  EXPECT_EQ(model->info().block_size, 512);
  EXPECT_EQ(model->info().vocab_size, 26679);
}

TEST(Gpt2Presets, SmallCpuAndTinySizes) {
  EXPECT_EQ(load_model("gpt2", "preset: gpt2-small-cpu")->info().num_parameters, 7'248'640);
  EXPECT_EQ(load_model("gpt2", "preset: gpt2-small-cpu\nvocab_multiple: 1")->info().num_parameters, 7'242'624);
  EXPECT_EQ(load_model("gpt2", "preset: gpt2-tiny")->info().num_parameters, 120'576);
}

// The benchmarks' sizes over the byte corpus, as docs/models.md states them.
TEST(Gpt2Presets, BenchmarkSizesOverBytes) {
  // 257 ids, padded to 384 rows.
  EXPECT_EQ(load_model("gpt2", "preset: gpt2-small-cpu\nvocab_size: 257")->info().num_parameters, 858'880);
  EXPECT_EQ(load_model("gpt2", "preset: gpt2-mid-cpu\nvocab_size: 257")->info().num_parameters, 4'870'144);
  EXPECT_EQ(load_model("gpt2", "preset: gpt2-big-cpu\nvocab_size: 257")->info().num_parameters, 31'787'008);
}

TEST(Gpt2Options, SizesOverrideThePreset) {
  const auto model = load_model("gpt2", "preset: gpt2-tiny\nn_layer: 3\nblock_size: 16\nvocab_size: 100");
  const auto params = model->parameters();
  std::set<std::string> names;
  for (const auto& p : params) names.insert(p.name);
  EXPECT_TRUE(names.count("h.2.mlp.c_proj.bias"));
  EXPECT_FALSE(names.count("h.3.ln_1.weight"));
  EXPECT_EQ(find_parameter(params, "wpe.weight").tensor.sizes(), (std::vector<std::int64_t>{16, 64}));
  EXPECT_EQ(find_parameter(params, "wte.weight").tensor.sizes(), (std::vector<std::int64_t>{128, 64}));
  EXPECT_EQ(model->info().block_size, 16);
}

TEST(Gpt2Options, AllSizesWithoutPreset) {
  const auto model =
      load_model("gpt2", "n_layer: 1\nn_head: 4\nn_embd: 32\nblock_size: 8\nvocab_size: 50\ndropout: 0.1");
  EXPECT_EQ(model->info().num_parameters,
            128 * 32 + 8 * 32 + (4 * 32 + 32 * 96 + 96 + 32 * 32 + 32 + 32 * 128 + 128 + 128 * 32 + 32) + 2 * 32);
}

TEST(Gpt2Options, MissingSizeWithoutPresetIsNamed) {
  const std::string message = error_of([] { load_model("gpt2", "n_layer: 1\nn_head: 4\nn_embd: 32\nblock_size: 8"); });
  EXPECT_TRUE(contains(message, "vocab_size")) << message;
  EXPECT_TRUE(contains(message, "preset")) << message;
}

TEST(Gpt2Options, UnknownPresetListsTheKnownOnes) {
  const std::string message = error_of([] { load_model("gpt2", "preset: gpt3-175b"); });
  EXPECT_TRUE(contains(message, "gpt3-175b")) << message;
  for (const char* known : {"gpt2-124m", "gpt2-bai-100m", "gpt2-small-cpu", "gpt2-tiny"})
    EXPECT_TRUE(contains(message, known)) << message;
}

TEST(Gpt2Options, HeadsMustDivideWidth) {
  const std::string message = error_of([] { load_model("gpt2", "preset: gpt2-tiny\nn_embd: 65"); });
  EXPECT_TRUE(contains(message, "n_embd")) << message;
  EXPECT_TRUE(contains(message, "n_head")) << message;
  EXPECT_TRUE(contains(message, "divisible")) << message;
}

TEST(Gpt2Options, NonPositiveSizeAndBadDropoutAreRefused) {
  EXPECT_TRUE(contains(error_of([] { load_model("gpt2", "preset: gpt2-tiny\nn_layer: 0"); }), "n_layer"));
  EXPECT_TRUE(contains(error_of([] { load_model("gpt2", "preset: gpt2-tiny\ndropout: 1.0"); }), "dropout"));
}

TEST(Gpt2Loss, SequenceLongerThanBlockSizeIsRefused) {
  const auto model = load_model("gpt2", "preset: gpt2-tiny\nblock_size: 8");
  EXPECT_NO_THROW(model->loss(random_batch(1, 8, 256)));
  const std::string message = error_of([&] { model->loss(random_batch(1, 9, 256)); });
  EXPECT_TRUE(contains(message, "block_size")) << message;
  EXPECT_TRUE(contains(message, "9")) << message;
}

TEST(Gpt2Loss, HeadIsTiedToTokenEmbedding) {
  torch::manual_seed(7);
  // vocab 300 (384 rows with padding): no other matrix of the tiny model is (384, 64), so a second (V,C)
  // matrix would stand out.
  const auto model = load_model("gpt2", "preset: gpt2-tiny\nvocab_size: 300");
  const auto params = model->parameters();
  const auto wte = find_parameter(params, "wte.weight").tensor;
  ASSERT_EQ(wte.size(0), 384);
  for (const auto& p : params)
    if (p.name != "wte.weight") {
      EXPECT_NE(p.tensor.sizes(), wte.sizes()) << p.name;
    }

  // Inputs and targets use only ids below 100. Rows 100..299 of wte are never looked up, so any gradient
  // they get came through the softmax, i.e. through the tied head.
  sdk::Batch batch{torch::randint(100, {2, 16}, torch::kLong), torch::randint(100, {2, 16}, torch::kLong)};
  model->loss(batch).backward();
  ASSERT_TRUE(wte.grad().defined());
  const auto unseen_rows = wte.grad().slice(0, 100, 300);
  EXPECT_TRUE(unseen_rows.abs().sum(1).gt(0).all().item<bool>()) << "every unseen row gets a softmax gradient";
  EXPECT_EQ(wte.grad().slice(0, 300, 384).abs().max().item<double>(), 0.0) << "padding rows get none";
}

// The same seed with and without padding: the real rows start equal, and the masked padding leaves the
// loss and every real gradient as they were (to fp32 rounding: the GEMMs differ in width).
TEST(Gpt2Loss, PaddingLeavesLossAndGradientsUnchanged) {
  torch::manual_seed(11);
  const auto plain = load_model("gpt2", "preset: gpt2-tiny\nvocab_size: 300\nvocab_multiple: 1");
  torch::manual_seed(11);
  const auto padded = load_model("gpt2", "preset: gpt2-tiny\nvocab_size: 300\nvocab_multiple: 64");
  const auto plain_wte = find_parameter(plain->parameters(), "wte.weight").tensor;
  const auto padded_wte = find_parameter(padded->parameters(), "wte.weight").tensor;
  ASSERT_EQ(plain_wte.size(0), 300);
  ASSERT_EQ(padded_wte.size(0), 320);
  EXPECT_TRUE(torch::equal(padded_wte.slice(0, 0, 300), plain_wte));
  EXPECT_TRUE(torch::equal(find_parameter(padded->parameters(), "h.1.mlp.c_fc.weight").tensor,
                           find_parameter(plain->parameters(), "h.1.mlp.c_fc.weight").tensor))
      << "the padding must not shift later draws";

  const auto batch = random_batch(3, 32, 300);
  const auto plain_loss = plain->loss(batch);
  const auto padded_loss = padded->loss(batch);
  EXPECT_NEAR(value(padded_loss), value(plain_loss), 1e-6 * value(plain_loss));
  EXPECT_GT(value(plain_loss), 5.0) << "an untrained model's loss is near log(300)";
  plain_loss.backward();
  padded_loss.backward();
  EXPECT_TRUE(torch::allclose(padded_wte.grad().slice(0, 0, 300), plain_wte.grad(), 1e-5, 1e-7));
  EXPECT_EQ(padded_wte.grad().slice(0, 300, 320).abs().max().item<double>(), 0.0);
}

TEST(Gpt2Options, VocabMultipleBelowOneIsRefused) {
  const std::string message = error_of([] { load_model("gpt2", "preset: gpt2-tiny\nvocab_multiple: 0"); });
  EXPECT_TRUE(contains(message, "vocab_multiple must be at least 1")) << message;
}

}  // namespace
}  // namespace gradsweep::test::models
