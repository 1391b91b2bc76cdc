#pragma once
#include <CLI/CLI.hpp>

namespace gradsweep::cli {

// `gradsweep project` (docs/projection.md).
void register_project_command(CLI::App& app);

}  // namespace gradsweep::cli
