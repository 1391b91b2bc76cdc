#pragma once
#include <CLI/CLI.hpp>

namespace gradsweep::cli {

// `gradsweep status` (docs/experiments.md).
void register_status_command(CLI::App& app);

}  // namespace gradsweep::cli
