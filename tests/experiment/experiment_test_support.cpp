#include "experiment_test_support.hpp"

#include "config/config_error.hpp"
#include "experiment/plan/experiment_file.hpp"

#include <gtest/gtest.h>

namespace gradsweep::test {
namespace fs = std::filesystem;

std::string tiny_experiment(const std::string& extra, int steps) {
  const fs::path corpus = byte_corpus();
  return "model: {name: gpt2, preset: gpt2-tiny, vocab_size: 257, block_size: 32}\n"
         "strategy: {name: single}\n"
         "data: {train: " +
         (corpus / "train.bin").string() + ", val: " + (corpus / "val.bin").string() +
         "}\n"
         "train: {steps: " +
         std::to_string(steps) +
         ", batch_size: 4, seq_len: 16, lr: 1e-3}\n"
         "eval: {batches: 1}\n"
         "metrics: {peak_flops: 1e11, log_every: 1}\n" +
         extra;
}

runs::SweepPlan plan_text(const fs::path& dir, const std::string& text, const std::vector<std::string>& overrides,
                          const std::string& name) {
  write_text(dir / name, text);
  const auto exp = experiment::load_experiment_file(dir / name, overrides);
  plugins::PluginRegistry registry;
  registry.scan({plugin_dir()});
  return experiment::plan_sweep(exp, dir / "out", registry, gradsweep_binary());
}

std::vector<std::string> plan_problems(const fs::path& dir, const std::string& text) {
  try {
    plan_text(dir, text);
  } catch (const config::ConfigError& e) {
    return e.problems();
  }
  return {};
}

bool has_problem(const std::vector<std::string>& problems, const std::string& fragment) {
  for (const auto& p : problems)
    if (p.find(fragment) != std::string::npos) return true;
  return false;
}

std::string gradsweep(const std::string& args) { return gradsweep_binary().string() + " " + args; }

}  // namespace gradsweep::test
