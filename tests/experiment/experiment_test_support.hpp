#pragma once
// Helpers for the experiment suite: experiment files over the shared byte corpus and tiny GPT-2 cells,
// planning them through the library as `gradsweep plan` does, and running the CLI.
#include "experiment/plan/sweep_plan.hpp"

#include "support/test_support.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::test {

// The base of a tiny cell: gpt2-tiny (vocab 257, block 32), `steps` steps of batch 4 x 16 tokens, on the
// byte corpus; `extra` is appended (matrix, launcher, ...).
std::string tiny_experiment(const std::string& extra, int steps = 4);

// Writes `text` to <dir>/<name> and plans it (plugins from the build tree).
runs::SweepPlan plan_text(const std::filesystem::path& dir, const std::string& text,
                          const std::vector<std::string>& overrides = {}, const std::string& name = "exp.yaml");

// The validation problems of `text` (empty when it plans).
std::vector<std::string> plan_problems(const std::filesystem::path& dir, const std::string& text);
bool has_problem(const std::vector<std::string>& problems, const std::string& fragment);

std::string gradsweep(const std::string& args);

}  // namespace gradsweep::test
