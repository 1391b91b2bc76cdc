#pragma once
// docs/reference/cli.md: the top level's and every command's `--help`, as CLI11 prints them, from the
// same CLI::App that parses the command line.
#include <CLI/CLI.hpp>

#include <string>

namespace gradsweep::reference {

// `app` named "gradsweep"; hidden commands (no group) are left out, as `--help` leaves them out.
std::string cli_reference(const CLI::App& app);

}  // namespace gradsweep::reference
