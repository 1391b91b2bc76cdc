#pragma once
#include <CLI/CLI.hpp>

namespace gradsweep::cli {
// `gradsweep train CONFIG --out DIR`: trains one cell; what every rank of a job runs.
void register_train_command(CLI::App& app);
}  // namespace gradsweep::cli
