#pragma once
#include <CLI/CLI.hpp>

namespace gradsweep::cli {
// `gradsweep cluster up|down|list|args|exec`: an emulated multi-node cluster on this machine (network
// namespaces joined by shaped veth links). See docs/cluster.md.
void register_cluster_command(CLI::App& app);
}  // namespace gradsweep::cli
