#pragma once
#include <CLI/CLI.hpp>

namespace gradsweep::cli {

// `gradsweep report` (docs/experiments.md).
void register_report_command(CLI::App& app);

}  // namespace gradsweep::cli
