#pragma once
// What the tests against Hugging Face transformers share: a real training run of a cell, its export, and
// the reference script (hf_reference_loss.py) run by the project's Python (scripts/requirements.txt).
#include "support/python_reference.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace gradsweep::test::hf {
namespace fs = std::filesystem;

#define GRADSWEEP_REQUIRE_HF_PYTHON() GRADSWEEP_REQUIRE_PYTHON(GRADSWEEP_TEST_PYTHON, "transformers, safetensors")

// The loss gradsweep logged at `step` (its batch, after `step` updates); NaN when there is none.
inline double logged_loss(const fs::path& metrics, std::int64_t step) {
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    const auto record = nlohmann::json::parse(line);
    if (record.at("step") == step) return record.at("loss");
  }
  return std::nan("");
}

// The cell file for `model_section` ("model: {...}") under `strategy`: the byte corpus, batch 6 x 48,
// checkpoints every 3 steps.
inline fs::path write_cell(const fs::path& dir, const std::string& model_section, const std::string& strategy,
                           int steps) {
  const fs::path corpus = byte_corpus();
  const fs::path cell = dir / "cell.yaml";
  write_text(cell, model_section + "\nstrategy: {name: " + strategy +
                       "}\ndata: {train: " + (corpus / "train.bin").string() +
                       ", val: " + (corpus / "val.bin").string() + "}\ntrain: {steps: " + std::to_string(steps) +
                       ", batch_size: 6, seq_len: 48, lr: 3e-3, seed: 5}\n"
                       "checkpoint: {every: 3}\neval: {batches: 1}\nruntime: {threads: 1}\n");
  return cell;
}

// `gradsweep train` of `cell` on `ranks` ranks into `out`.
inline CommandResult train(const fs::path& cell, const fs::path& out, int ranks) {
  const std::string command = gradsweep_binary().string() + " train " + cell.string() + " --out " + out.string();
  return run_command(ranks > 1 ? mpirun(ranks, command) : command);
}

// `gradsweep export` of the cell in `out` at `step` into `hf`.
inline CommandResult export_hf(const fs::path& out, std::int64_t step, const fs::path& hf) {
  return run_command(gradsweep_binary().string() + " export " + out.string() + " --format hf --out " + hf.string() +
                     " --step " + std::to_string(step) + " 2>&1");
}

// transformers' loss on step `step`'s batch of the byte corpus for the model in `hf`, its class and, with
// `logits_file`, its logits and inputs written there (safetensors: "logits", "input_ids").
inline nlohmann::json reference(const fs::path& hf, std::int64_t step, const fs::path& logits_file = {}) {
  const fs::path script = source_dir() / "tests" / "models" / "hf_reference_loss.py";
  const CommandResult r = run_command(std::string(GRADSWEEP_TEST_PYTHON) + " " + script.string() + " " + hf.string() +
                                      " " + (byte_corpus() / "train.bin").string() + " " + std::to_string(step) +
                                      " 6 48 " + logits_file.string() + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto start = r.output.rfind("{\"loss\"");
  if (start == std::string::npos) return nlohmann::json{{"loss", std::nan("")}, {"architecture", ""}};
  return nlohmann::json::parse(r.output.substr(start));
}

}  // namespace gradsweep::test::hf
