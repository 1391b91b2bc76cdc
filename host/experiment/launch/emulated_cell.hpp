#pragma once
// The launcher keys of a cell that runs on an emulated cluster (docs/experiments.md, docs/cluster.md):
//
//   launcher: {name: emulated, nodes: 4, ranks_per_node: 2, link: {bandwidth: 1Gbit}, dilation: 1 | auto}
//
// Like every launcher key they may be matrix axes (launcher.link.bandwidth, alias link_bandwidth;
// launcher.dilation, alias dilation). A cell has nodes x ranks_per_node ranks, ranks 0..R-1 on node 0
// and so on, so the ranks always fit the cluster; what can be wrong is checked when the sweep is planned,
// before anything runs, with the key's file:line:column: a rate that does not parse, more nodes than one
// cluster holds, a dilation below 1, no root, or no `ip`/`tc`/`unshare`.
#include "config/config_error.hpp"
#include "experiment/launch/launcher.hpp"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <string>

namespace gradsweep::experiment {

// Reads launcher.name, launcher.link and launcher.dilation of a cell's tree `root` (the experiment's tree
// with the cell's matrix values set); `name` and `dilation` as resolved from the launcher's options.
// Problems go to `diag`. For a local cell, link and dilation are refused: they would do nothing.
runs::EmulatedCluster resolve_emulated_launcher(const YAML::Node& root, const std::string& name,
                                                const std::string& dilation, int nodes, config::Diagnostics& diag);

// The cell's identity beyond nodes and ranks_per_node: two cells that differ only by their link are two
// cells. Empty for a local cell, so that local sweeps keep their ids.
nlohmann::json emulated_identity(const runs::EmulatedCluster& emulated);

}  // namespace gradsweep::experiment
