#pragma once
#include <CLI/CLI.hpp>

namespace gradsweep::cli {
// `gradsweep plugins [--json] [--path DIR]...`: every plugin found, and every file refused, with why.
void register_plugins_command(CLI::App& app);
}  // namespace gradsweep::cli
