#pragma once
// gradsweep-cluster (host/cluster_cli/cluster_main.cpp) as gradsweep calls it. Everything on an emulated cluster that
// needs root (network namespaces, veth links, tc shaping, /etc/hosts) runs in that small executable without
// LibTorch or MPI, never in gradsweep's own process: `gradsweep cluster ...` becomes it (execv), and a sweep's
// emulated cells (launcher_emulated.hpp, emulated_cell.hpp) run it as a child per operation, reading JSON on
// its stdout (docs/cluster.md).
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::experiment {

// gradsweep-cluster in the directory of the running executable (as installed and as built: both sit beside
// gradsweep). Throws std::runtime_error naming the path when it is not there or not executable.
std::filesystem::path cluster_tool_path();

// Runs gradsweep-cluster with `args` and returns what it printed on stdout. When it fails, throws
// std::runtime_error carrying its own message (its stderr, less the "error: " in front). It runs in a
// process group of its own: the Ctrl-C that stops a sweep does not cut a bring-up or a teardown short.
std::string run_cluster_tool(const std::vector<std::string>& args);

// The same, its stdout parsed as JSON (a reply that does not parse throws, quoting it).
nlohmann::json run_cluster_tool_json(const std::vector<std::string>& args);

}  // namespace gradsweep::experiment
