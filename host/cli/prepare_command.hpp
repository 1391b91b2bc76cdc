// `gradsweep prepare`: the command-line face of prepare_corpus() (data/prepare.hpp).
#pragma once
#include <CLI/CLI.hpp>

namespace gradsweep::cli {

// Adds the `prepare` subcommand to `app`. Its callback runs prepare_corpus() and prints a summary; errors
// (bad options, unreadable inputs) propagate as exceptions derived from std::exception.
void register_prepare_command(CLI::App& app);

}  // namespace gradsweep::cli
