// `model.init_from`: training starts from a Hugging Face model directory. The directory is written by
// transformers itself (save_pretrained of a freshly initialised model of the exported architecture), and a
// sharded run on 2 ranks must log, for its first batch, the loss transformers computes on it: the weights
// reached every rank and every shard before the first step. A directory that does not fit the model is
// refused when the sweep is planned, naming the key, its place and the tensor; nothing trains.
#include "hf_test_support.hpp"

#include "weights/safetensors_file.hpp"
#include "support/plugin_fixture.hpp"

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;

struct InitCase {
  const char* label;
  const char* model;  // the cell's model section, without its closing brace
  const char* strategy;
};
void PrintTo(const InitCase& c, std::ostream* os) { *os << c.label; }

class InitFrom : public ::testing::TestWithParam<InitCase> {};

TEST_P(InitFrom, ShardedTrainingStartsFromWeightsTransformersWrote) {
  GRADSWEEP_REQUIRE_HF_PYTHON();
  const InitCase& c = GetParam();
  const fs::path dir = scratch_dir();
  // The architecture, as gradsweep exports it; then weights of transformers' own making.
  ASSERT_EQ(hf::train(hf::write_cell(dir, std::string(c.model) + "}", "single", 3), dir / "first", 1).exit_code, 0);
  const CommandResult exported = hf::export_hf(dir / "first", 3, dir / "exported");
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  const fs::path script = source_dir() / "tests" / "models" / "hf_fresh_model.py";
  const CommandResult fresh = run_command(std::string(GRADSWEEP_TEST_PYTHON) + " " + script.string() + " " +
                                          (dir / "exported").string() + " " + (dir / "fresh").string() + " 2>&1");
  ASSERT_EQ(fresh.exit_code, 0) << fresh.output;

  const fs::path second = dir / "second";
  fs::create_directories(second);
  const std::string model = std::string(c.model) + ", init_from: " + (dir / "fresh").string() + "}";
  const CommandResult trained = hf::train(hf::write_cell(second, model, c.strategy, 2), second / "out", 2);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  EXPECT_NE(trained.output.find("model weights from " + (dir / "fresh").string()), std::string::npos);
  const double ours = hf::logged_loss(second / "out" / "metrics.jsonl", 0);
  const double theirs = hf::reference(dir / "fresh", 0)["loss"].get<double>();
  EXPECT_NEAR(ours, theirs, 1e-5 * theirs);
  // Not the model's own initialisation: that starts elsewhere.
  EXPECT_GT(std::abs(hf::logged_loss(dir / "first" / "metrics.jsonl", 0) - ours), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(
    Models, InitFrom,
    ::testing::Values(InitCase{"gpt2_zero2", "model: {name: gpt2, preset: gpt2-tiny, vocab_size: 300, block_size: 48",
                               "zero2"},
                      InitCase{"llama_fsdp",
                               "model: {name: llama, preset: llama-tiny, vocab_size: 300, "
                               "block_size: 48",
                               "fsdp"}),
    [](const auto& info) { return std::string(info.param.label); });

// llama-tiny at vocabulary 300, exported in-process (no Python needed) into `dir`.
void write_llama_300(const fs::path& dir) {
  const auto model = load_model("llama", "preset: llama-tiny\nvocab_size: 300\nblock_size: 48");
  sdk::ExportedWeights weights;
  sdk::check((*model)->export_weights("hf", &weights));
  fs::create_directories(dir);
  weights::write_safetensors(dir / "model.safetensors", weights.tensors);
  write_text(dir / "config.json", weights.config_json);
}

CommandResult plan(const fs::path& dir, const std::string& model_section) {
  const fs::path corpus = byte_corpus();
  write_text(dir / "exp.yaml",
             model_section + "\nstrategy: {name: single}\ndata: {train: " + (corpus / "train.bin").string() +
                 ", val: " + (corpus / "val.bin").string() + "}\ntrain: {steps: 2, batch_size: 4, seq_len: 16}\n");
  return run_command("timeout 120 " + gradsweep_binary().string() + " plan " + (dir / "exp.yaml").string() + " --out " +
                     (dir / "out").string() + " 2>&1");
}

TEST(InitFromRefused, WeightsOfAnotherShapeAtPlanTime) {
  const fs::path dir = scratch_dir();
  write_llama_300(dir / "weights");
  const std::string head =
      "model: {name: llama, preset: llama-tiny, block_size: 48, init_from: " + (dir / "weights").string() +
      ", vocab_size: ";
  const CommandResult fits = plan(dir, head + "300}");
  EXPECT_EQ(fits.exit_code, 0) << fits.output;
  const CommandResult wider = plan(dir, head + "301}");
  EXPECT_EQ(wider.exit_code, kConfigError) << wider.output;
  EXPECT_NE(wider.output.find("exp.yaml:1:"), std::string::npos) << wider.output;
  EXPECT_NE(wider.output.find("model.init_from"), std::string::npos) << wider.output;
  EXPECT_NE(wider.output.find("model.embed_tokens.weight is [300, "), std::string::npos) << wider.output;
  EXPECT_FALSE(fs::exists(dir / "out" / "cells")) << "nothing planned to train";
}

TEST(InitFromRefused, MissingDirectoryAndTruncatedFileNameThemselves) {
  const fs::path dir = scratch_dir();
  const CommandResult missing =
      plan(dir, "model: {name: llama, preset: llama-tiny, init_from: " + (dir / "nowhere").string() + "}");
  EXPECT_EQ(missing.exit_code, kConfigError) << missing.output;
  EXPECT_NE(missing.output.find("model.init_from: no such directory: " + (dir / "nowhere").string()), std::string::npos)
      << missing.output;

  write_llama_300(dir / "weights");
  const fs::path file = dir / "weights" / "model.safetensors";
  fs::resize_file(file, fs::file_size(file) - 100);
  const CommandResult truncated = plan(
      dir, "model: {name: llama, preset: llama-tiny, vocab_size: 300, init_from: " + (dir / "weights").string() + "}");
  EXPECT_EQ(truncated.exit_code, kConfigError) << truncated.output;
  EXPECT_NE(truncated.output.find(file.string() + ": tensor '"), std::string::npos) << truncated.output;
  EXPECT_NE(truncated.output.find("truncated file?"), std::string::npos) << truncated.output;
}

}  // namespace
}  // namespace gradsweep::test
