#pragma once
// Where and how a cell's ranks run: its tree's `launcher` section (launcher_options.hpp), with the emulated
// cluster's links, the elastic floor and the `slurm` part, validated with file:line:column.
#include "config/config_error.hpp"
#include "runs/planned_cell.hpp"

#include <gradsweep/sdk/options.hpp>

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace gradsweep::experiment {

struct LauncherSettings {
  sdk::Options launcher;
  runs::EmulatedCluster emulated;
  sdk::Options slurm;
  std::vector<std::string> extra;  // launcher.slurm.extra: sbatch option lines
  std::vector<std::string> setup;  // launcher.slurm.setup: shell lines run before srun
  int elastic_min_nodes = 0;       // launcher.elastic.min_nodes
  int nodes() const { return static_cast<int>(launcher.integer("nodes")); }
  int ranks_per_node() const { return static_cast<int>(launcher.integer("ranks_per_node")); }
};

// The launcher of a cell's tree (CellTree::root); problems go to `diag`.
LauncherSettings resolve_launcher(const YAML::Node& root, config::Diagnostics& diag);

}  // namespace gradsweep::experiment
