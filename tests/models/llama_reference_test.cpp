// gradsweep's `llama` against Hugging Face transformers' LlamaForCausalLM: a real run trains llama-tiny
// (grouped-query attention, rotary embeddings, padded vocabulary) for a few steps and checkpoints; the
// checkpoint's parameters, loaded into transformers, give the loss gradsweep logged for the next step's
// batch, to fp32 rounding. The checkpoint of another step does not (so the comparison can fail).
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

TEST(LlamaReference, TransformersGivesTheLossGradsweepLogged) {
  const std::string python = GRADSWEEP_TEST_PYTHON;
  if (run_command(python + " -c 'import transformers'").exit_code != 0) {
    const std::string why = python + " has no transformers (scripts/install-deps.sh installs it)";
    if (in_ci()) FAIL() << "under CI: " << why;
    GTEST_SKIP() << why;
  }
  const fs::path dir = scratch_dir();
  const fs::path corpus = byte_corpus();
  const fs::path cell = dir / "cell.yaml";
  // 300 ids in 384 rows, a tied head; 5 steps, checkpoints after 3 and 5 (the learning rate reaches 0 only
  // at the last step, so the two differ).
  write_text(cell,
             "model: {name: llama, preset: llama-tiny, vocab_size: 300, block_size: 48}\n"
             "strategy: {name: single}\ndata: {train: " +
                 (corpus / "train.bin").string() + ", val: " + (corpus / "val.bin").string() +
                 "}\ntrain: {steps: 5, batch_size: 6, seq_len: 48, lr: 3e-3, seed: 5}\n"
                 "checkpoint: {every: 3}\neval: {batches: 1}\nruntime: {threads: 1}\n");
  const fs::path out = dir / "out";
  const CommandResult train = run_command(gradsweep_binary().string() + " train " + cell.string() + " --out " +
                                          out.string() + " --set model.tie_embeddings=true");
  ASSERT_EQ(train.exit_code, 0) << train.output;
  const std::string sizes =
      R"({"vocab_size": 300, "n_embd": 64, "intermediate_size": 192, "n_layer": 2, "n_head": 4, "n_kv_head": 2, )"
      R"("block_size": 48, "norm_eps": 1e-5, "rope_theta": 10000.0, "tie_embeddings": true})";
  const auto reference = [&](const std::string& checkpoint_step) {
    const fs::path script = source_dir() / "tests" / "models" / "hf_llama_reference.py";
    const CommandResult r = run_command(python + " " + script.string() + " " +
                                        (out / "checkpoint" / "rank-0" / checkpoint_step / "model.pt").string() + " " +
                                        (corpus / "train.bin").string() + " 3 6 48 '" + sizes + "' 2>&1");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const auto json_start = r.output.rfind('{');
    return json_start == std::string::npos
               ? std::nan("")
               : nlohmann::json::parse(r.output.substr(json_start))["transformers"].get<double>();
  };
  const double ours = logged_loss(out / "metrics.jsonl", 3);  // the loss of step 3's batch, after 3 updates
  const double theirs = reference("step-3");
  EXPECT_NEAR(theirs, ours, 1e-5 * ours);
  const double other_weights = reference("step-5");
  EXPECT_GT(std::abs(other_weights - ours), 1e-4 * ours) << "another step's weights must give another loss";
}

}  // namespace
}  // namespace gradsweep::test
