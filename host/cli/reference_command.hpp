#pragma once
#include <CLI/CLI.hpp>

namespace gradsweep::cli {

// `gradsweep reference --out DIR`: writes the generated reference (docs/reference/) from this binary's
// schema, commands, environment registry and shipped plugins. Register it after every other command:
// cli.md lists the commands `app` has when it runs.
void register_reference_command(CLI::App& app);

}  // namespace gradsweep::cli
