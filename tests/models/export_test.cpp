// `gradsweep export --format hf` against Hugging Face transformers: real runs train gpt2 under zero2 and
// llama under fsdp on 2 ranks (so rank 0's checkpoint holds gathered shards) and llama with its own head on
// one; each exported step-3 checkpoint, loaded by AutoModelForCausalLM.from_pretrained, gives the loss that
// gradsweep logged for step 3's batch, to fp32 rounding, and the step-5 export does not. Errors name what
// is missing.
#include "support/test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;

bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

double logged_loss(const fs::path& metrics, std::int64_t step) {
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    const auto record = nlohmann::json::parse(line);
    if (record.at("step") == step) return record.at("loss");
  }
  return std::nan("");
}

struct Case {
  const char* label;
  const char* model;  // the cell's model section
  const char* strategy;
  int ranks;
  const char* architecture;  // transformers' class
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.label; }

class ExportToTransformers : public ::testing::TestWithParam<Case> {};

TEST_P(ExportToTransformers, LoadsAndGivesTheLossGradsweepLogged) {
  const std::string python = GRADSWEEP_TEST_PYTHON;
  if (run_command(python + " -c 'import transformers, safetensors'").exit_code != 0) {
    const std::string why = python + " has no transformers/safetensors (scripts/install-deps.sh installs them)";
    if (in_ci()) FAIL() << "under CI: " << why;
    GTEST_SKIP() << why;
  }
  const Case& c = GetParam();
  const fs::path dir = scratch_dir();
  const fs::path corpus = byte_corpus();
  const fs::path cell = dir / "cell.yaml";
  // 5 steps, checkpoints after 3 and 5: the learning rate reaches 0 only at the last step, so the two differ.
  write_text(cell, std::string(c.model) + "\nstrategy: {name: " + c.strategy + "}\ndata: {train: " +
                       (corpus / "train.bin").string() + ", val: " + (corpus / "val.bin").string() +
                       "}\ntrain: {steps: 5, batch_size: 6, seq_len: 48, lr: 3e-3, seed: 5}\n"
                       "checkpoint: {every: 3}\neval: {batches: 1}\nruntime: {threads: 1}\n");
  const fs::path out = dir / "out";
  const std::string train = gradsweep_binary().string() + " train " + cell.string() + " --out " + out.string();
  const CommandResult trained = run_command(c.ranks > 1 ? mpirun(c.ranks, train) : train);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;

  const auto reference = [&](int step) {
    const fs::path hf = dir / ("hf-" + std::to_string(step));
    const CommandResult exported = run_command(gradsweep_binary().string() + " export " + out.string() +
                                               " --format hf --out " + hf.string() + " --step " + std::to_string(step));
    EXPECT_EQ(exported.exit_code, 0) << exported.output;
    EXPECT_TRUE(fs::exists(hf / "config.json") && fs::exists(hf / "model.safetensors")) << exported.output;
    const fs::path script = source_dir() / "tests" / "models" / "hf_reference_loss.py";
    const CommandResult r = run_command(python + " " + script.string() + " " + hf.string() + " " +
                                        (corpus / "train.bin").string() + " 3 6 48 2>&1");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const auto start = r.output.rfind("{\"loss\"");
    if (start == std::string::npos) return nlohmann::json{{"loss", std::nan("")}, {"architecture", ""}};
    return nlohmann::json::parse(r.output.substr(start));
  };
  const double ours = logged_loss(out / "metrics.jsonl", 3);  // step 3's batch, after 3 updates
  const nlohmann::json at3 = reference(3);
  EXPECT_EQ(at3["architecture"], c.architecture);
  EXPECT_NEAR(at3["loss"].get<double>(), ours, 1e-5 * ours);
  const double at5 = reference(5)["loss"].get<double>();
  EXPECT_GT(std::abs(at5 - ours), 1e-4 * ours) << "another step's weights must give another loss";
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
