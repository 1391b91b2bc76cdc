#pragma once
// `gradsweep cluster ...` runs gradsweep-cluster, the executable beside gradsweep that carries the cluster
// commands (cluster_main.cpp): everything that needs root happens in that small program, never in gradsweep
// with its LibTorch and MPI (docs/cluster.md).
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace gradsweep::cli {

// Replaces this process with gradsweep-cluster (execv: its exit status and the signals sent to this process are
// then its own), given `args`. Throws std::runtime_error saying where it looked when it is not there.
[[noreturn]] void run_cluster_tool_instead(const std::vector<std::string>& args);

// gradsweep's `cluster`: the subcommands of cluster_command.hpp, parsed here too (a mistake is reported as
// `gradsweep cluster ...`, and --help and docs/reference describe them), each then forwarded to
// gradsweep-cluster with the arguments that followed `cluster` in `argv`.
void register_cluster_command(CLI::App& app, int argc, char** argv);

}  // namespace gradsweep::cli
