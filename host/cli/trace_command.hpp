#pragma once
#include <CLI/CLI.hpp>

namespace gradsweep::cli {

// `gradsweep trace DIR` (docs/results.md, "Trace"): merges a cell's timelines and says where the trace is.
void register_trace_command(CLI::App& app);

}  // namespace gradsweep::cli
