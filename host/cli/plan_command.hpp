#pragma once
#include <CLI/CLI.hpp>

namespace gradsweep::cli {

// `gradsweep plan` (docs/experiments.md).
void register_plan_command(CLI::App& app);

}  // namespace gradsweep::cli
