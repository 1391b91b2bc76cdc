#include "experiment/launch/emulated_cell.hpp"

#include "experiment/launch/cluster_tool.hpp"
#include "experiment/launch/launcher_options.hpp"

#include "cluster/bandwidth.hpp"
#include "cluster/cluster_spec.hpp"
#include "cluster/time_dilation.hpp"
#include "config/key_path.hpp"
#include "config/option_schema.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <stdexcept>

namespace gradsweep::experiment {
namespace {

// "launcher.link.bandwidth: '1GB/s' looks like ..." -> "'1GB/s' looks like ...": Diagnostics adds the key.
std::string without_key(const std::string& message, const std::string& key) {
  return message.rfind(key + ": ", 0) == 0 ? message.substr(key.size() + 2) : message;
}

// What stops this machine making clusters (no root, no ip/tc/unshare, no gradsweep-cluster), asked of
// gradsweep-cluster (the process that would make them) once per process: a sweep of thousands of cells asks
// for every one.
const std::string& network_admin_problem() {
  static const std::string problem = [] {
    try {
      run_cluster_tool({"check", "--for", "launcher.name: emulated"});
      return std::string();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  }();
  return problem;
}

// The node at `path`, else its nearest ancestor: where a message about a missing key points.
YAML::Node node_or_parent(const YAML::Node& root, std::string path) {
  for (;;) {
    if (const YAML::Node n = config::find_key_path(root, path); n) return n;
    const auto dot = path.rfind('.');
    if (dot == std::string::npos) return root;
    path = path.substr(0, dot);
  }
}

}  // namespace

runs::EmulatedCluster resolve_emulated_launcher(const YAML::Node& root, const std::string& name,
                                                const std::string& dilation, int nodes, config::Diagnostics& diag) {
  runs::EmulatedCluster emulated;
  const YAML::Node name_node = node_or_parent(root, "launcher.name");
  const YAML::Node link_node = config::find_key_path(root, "launcher.link");
  if (name != "local" && name != "emulated") {
    diag.error(name_node, "launcher.name",
               "'" + name +
                   "' is not a launcher of experiment files; local (mpirun on this machine) or emulated "
                   "(an emulated cluster on this machine, docs/cluster.md); Slurm is `gradsweep run --launcher slurm`");
    return emulated;
  }
  if (name == "local") {
    for (const char* key : {"launcher.link", "launcher.dilation"})
      if (const YAML::Node n = config::find_key_path(root, key); n)
        diag.error(n, key, "only an emulated cluster has links to shape; set launcher.name: emulated, or drop it");
    return emulated;
  }
  emulated.enabled = true;
  if (!network_admin_problem().empty())
    diag.error(name_node, "launcher.name", without_key(network_admin_problem(), "launcher.name"));
  if (nodes > cluster::kMaxNodes)
    diag.error(node_or_parent(root, "launcher.nodes"), "launcher.nodes",
               std::to_string(nodes) + " nodes do not fit one emulated cluster (1 to " +
                   std::to_string(cluster::kMaxNodes) + ")");

  const sdk::Options link = config::resolve_options(link_node, "launcher.link", link_options(), {}, diag);
  const std::string rate = link.text("bandwidth");
  const YAML::Node rate_node = node_or_parent(root, "launcher.link.bandwidth");
  if (rate.empty()) {
    diag.error(rate_node, "launcher.link.bandwidth",
               "an emulated cluster needs its link rate, e.g. launcher: {name: emulated, link: {bandwidth: 1Gbit}}");
  } else {
    try {
      emulated.link_bits_per_second = cluster::parse_bandwidth(rate, "launcher.link.bandwidth");
    } catch (const std::invalid_argument& e) {
      diag.error(rate_node, "launcher.link.bandwidth", without_key(e.what(), "launcher.link.bandwidth"));
    }
  }
  const YAML::Node dilation_node = node_or_parent(root, "launcher.dilation");
  try {
    emulated.dilation = cluster::parse_dilation(dilation);
  } catch (const std::invalid_argument&) {
    diag.error(
        dilation_node, "launcher.dilation",
        "'" + dilation + "' must be a number >= 1 (1: no dilation) or auto (measured when the cluster comes up)");
  }
  if (emulated.link_bits_per_second > 0 && emulated.dilation >= 1.0 &&
      static_cast<double>(emulated.link_bits_per_second) / emulated.dilation < 8000.0)
    diag.error(dilation_node, "launcher.dilation",
               "the link shaped at " + rate + " / " + dilation + " would be below 8kbit");
  return emulated;
}

nlohmann::json emulated_identity(const runs::EmulatedCluster& emulated) {
  if (!emulated.enabled) return nullptr;
  return {{"name", "emulated"},
          {"link_bits_per_second", emulated.link_bits_per_second},
          {"dilation", emulated.dilation == 0.0 ? nlohmann::json("auto") : nlohmann::json(emulated.dilation)}};
}

}  // namespace gradsweep::experiment
