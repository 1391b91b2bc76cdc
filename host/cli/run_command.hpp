#pragma once
#include <CLI/CLI.hpp>

namespace gradsweep::cli {

// `gradsweep run` (docs/experiments.md).
void register_run_command(CLI::App& app);

}  // namespace gradsweep::cli
