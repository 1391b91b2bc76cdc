// `gradsweep export --format hf` against Hugging Face transformers: real runs train gpt2 under zero2 and
// llama under fsdp on 2 ranks (so rank 0's checkpoint holds gathered shards) and llama with its own head on
// one; each exported step-3 checkpoint, loaded by AutoModelForCausalLM.from_pretrained, gives the loss that
// gradsweep logged for step 3's batch and the logits gradsweep's own forward gives (SDK 1.6
// ModelAbi::logits), to fp32 rounding, and the step-5 export does not. The export read back by the model
// (import_weights, what `model.init_from` does) exports to the same bytes. Errors name what is missing.
#include "hf_test_support.hpp"

#include "weights/model_import.hpp"
#include "weights/safetensors_file.hpp"
#include "support/plugin_fixture.hpp"

#include <yaml-cpp/yaml.h>

#include <iostream>

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;

struct Case {
  const char* label;
  const char* model;  // the cell's model section
  const char* strategy;
  int ranks;
  const char* architecture;  // transformers' class
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.label; }

// The case's model built through the host's loader, from its model section's options.
std::shared_ptr<LoadedModel> model_of(const Case& c) {
  const YAML::Node section = YAML::Load(c.model)["model"];
  return load_model(section["name"].as<std::string>(), YAML::Dump(section));
}

// How far gradsweep's logits are from transformers': the largest difference relative to the largest logit,
// and the largest difference of any one logit, absolute (a large logit elsewhere cannot hide it).
struct LogitDifference {
  double relative_to_largest = std::nan("");
  double largest_absolute = std::nan("");
};

// gradsweep's logits for transformers' inputs (written by the reference script), from the exported
// weights read back, against transformers' logits.
LogitDifference logit_difference(const Case& c, const fs::path& hf, const fs::path& reference_file) {
  const auto model = model_of(c);
  model->set_training(false);
  const weights::HfWeights weights(hf);
  sdk::check((*model)->import_weights("hf", weights.weights()));
  const weights::SafetensorsFile reference(reference_file);
  torch::Tensor inputs, expected;
  for (const auto& t : reference.tensors()) (t.name == "logits" ? expected : inputs) = t.tensor;
  torch::Tensor ours;
  sdk::check((*model)->logits({inputs.to(torch::kLong), inputs.to(torch::kLong)}, &ours));
  EXPECT_EQ(ours.sizes(), expected.sizes());
  if (ours.sizes() != expected.sizes()) return {};
  const double largest = (ours - expected).abs().max().item<double>();
  return {largest / expected.abs().max().item<double>(), largest};
}

// The model reads the export back and exports it again: the same config and the same bytes.
void expect_round_trip(const Case& c, const fs::path& hf, const fs::path& dir) {
  const auto model = model_of(c);
  {
    const weights::HfWeights weights(hf);
    sdk::check((*model)->import_weights("hf", weights.weights()));
  }
  sdk::ExportedWeights again;
  sdk::check((*model)->export_weights("hf", &again));
  weights::write_safetensors(dir / "again.safetensors", again.tensors);
  EXPECT_EQ(read_text(dir / "again.safetensors"), read_text(hf / "model.safetensors"));
  EXPECT_EQ(again.config_json + "\n", read_text(hf / "config.json"));
}

class ExportToTransformers : public ::testing::TestWithParam<Case> {};

TEST_P(ExportToTransformers, GivesTheLossAndLogitsOfGradsweepAndReadsBack) {
  GRADSWEEP_REQUIRE_HF_PYTHON();
  const Case& c = GetParam();
  const fs::path dir = scratch_dir();
  // 5 steps, checkpoints after 3 and 5: the learning rate reaches 0 only at the last step, so the two differ.
  const CommandResult trained = hf::train(hf::write_cell(dir, c.model, c.strategy, 5), dir / "out", c.ranks);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  for (const int step : {3, 5}) {
    const CommandResult exported = hf::export_hf(dir / "out", step, dir / ("hf-" + std::to_string(step)));
    ASSERT_EQ(exported.exit_code, 0) << exported.output;
  }
  const double ours = hf::logged_loss(dir / "out" / "metrics.jsonl", 3);  // step 3's batch, after 3 updates
  const nlohmann::json at3 = hf::reference(dir / "hf-3", 3, dir / "logits-3.safetensors");
  EXPECT_EQ(at3["architecture"], c.architecture);
  EXPECT_NEAR(at3["loss"].get<double>(), ours, 1e-5 * ours);
  const double at5 = hf::reference(dir / "hf-5", 3)["loss"].get<double>();
  EXPECT_GT(std::abs(at5 - ours), 1e-4 * ours) << "another step's weights must give another loss";

  const LogitDifference difference = logit_difference(c, dir / "hf-3", dir / "logits-3.safetensors");
  EXPECT_LT(difference.relative_to_largest, 1e-4);
  EXPECT_LT(difference.largest_absolute, 1e-4);  // per element, absolute
  std::cout << c.label << ": largest logit difference from transformers: " << difference.largest_absolute
            << " absolute, " << difference.relative_to_largest << " relative to the largest logit\n";
  expect_round_trip(c, dir / "hf-3", dir);
}

INSTANTIATE_TEST_SUITE_P(
    Models, ExportToTransformers,
    ::testing::Values(Case{"gpt2_zero2", "model: {name: gpt2, preset: gpt2-tiny, vocab_size: 300, block_size: 48}",
                           "zero2", 2, "GPT2LMHeadModel"},
                      Case{"llama_fsdp_tied",
                           "model: {name: llama, preset: llama-tiny, vocab_size: 300, block_size: 48, "
                           "tie_embeddings: true}",
                           "fsdp", 2, "LlamaForCausalLM"},
                      Case{"llama_own_head",
                           "model: {name: llama, preset: llama-tiny, vocab_size: 300, block_size: 48}", "single", 1,
                           "LlamaForCausalLM"}),
    [](const auto& info) { return std::string(info.param.label); });

TEST(Export, ACellWithoutCheckpointOrStepIsRefusedByName) {
  const fs::path dir = scratch_dir();
  const CommandResult none = run_command(gradsweep_binary().string() + " export " + dir.string() + " --out " +
                                         (dir / "hf").string() + " 2>&1");
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.output.find("no config.resolved.yaml in " + dir.string()), std::string::npos) << none.output;
  EXPECT_FALSE(fs::exists(dir / "hf"));
  const CommandResult format = run_command(gradsweep_binary().string() + " export " + dir.string() +
                                           " --format onnx --out " + (dir / "hf").string() + " 2>&1");
  EXPECT_NE(format.exit_code, 0);
  EXPECT_NE(format.output.find("onnx"), std::string::npos) << format.output;
}

}  // namespace
}  // namespace gradsweep::test
