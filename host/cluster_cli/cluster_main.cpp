// gradsweep-cluster: the emulated cluster's commands (docs/cluster.md), the only gradsweep executable that needs
// root. It links the cluster library and no LibTorch or MPI, so that what runs with CAP_NET_ADMIN and
// CAP_SYS_ADMIN is this small program alone: `gradsweep cluster ...` becomes it (cli/cluster_forward.hpp) and a
// sweep's emulated cells call it (experiment/launch/cluster_tool.hpp). Its subcommands are defined in
// cluster_command.cpp, shared with gradsweep's `cluster`; what each does is here.
#include "cluster_cli/cluster_command.hpp"

#include "cluster/bandwidth.hpp"
#include "cluster/cluster_exec.hpp"
#include "cluster/cluster_lifecycle.hpp"
#include "cluster/cluster_link.hpp"
#include "cluster/cluster_lock.hpp"
#include "cluster/cluster_spec.hpp"
#include "cluster/cluster_supervisor.hpp"
#include "cluster/cluster_sweeper.hpp"
#include "cluster/link_state.hpp"
#include "cluster/mpi_access.hpp"
#include "cluster/system_command.hpp"
#include "cluster/time_dilation.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace gradsweep::cluster_cli {
namespace {

using namespace gradsweep::cluster;

std::string shell_line(const std::vector<std::string>& args) {
  std::string line;
  for (const std::string& a : args) line += (line.empty() ? "" : " ") + a;
  return line;
}

std::string describe(const ClusterSpec& s) {
  char dilation[64];
  std::snprintf(dilation, sizeof dilation, "%.3g", s.dilation);
  return s.name + ": " + std::to_string(s.nodes) + " node(s) x " + std::to_string(s.ranks_per_node) +
         " rank(s), link " + format_bandwidth(s.link_bits_per_second) + ", dilation " + dilation + " (" +
         s.dilation_source + ") -> shaped at " + format_bandwidth(s.shaped_bits_per_second()) + ", subnet " +
         s.subnet();
}

void up(const ClusterArgs& a) {
  ClusterSpec spec;
  spec.name = a.name;
  spec.nodes = a.nodes;
  spec.ranks_per_node = a.ranks_per_node;
  spec.link_bits_per_second = parse_bandwidth(a.bandwidth, "--link-bandwidth");
  spec.dilation = parse_dilation(a.dilation);
  if (!spec.name.empty()) validate_name(spec.name);
  if (spec.dilation == 0.0) spec.dilation = 1.0;  // checked as 1 first: a bad spec fails before measuring
  ClusterSpec check = spec;
  if (check.name.empty()) check.name = "c";
  validate(check);
  require_network_admin("cluster up");
  if (a.dilation == "auto") {
    spec.dilation = measure_dilation(spec.nodes, spec.ranks_per_node);
    spec.dilation_source = "measured";
  }
  if (!a.dilation_source.empty()) spec.dilation_source = a.dilation_source;
  spec = bring_up(spec, nullptr, a.owner_lock);
  // A sweep's cluster goes with its sweep, even when the sweep is killed (cluster_supervisor.hpp).
  if (!a.owner_lock.empty()) supervise_owner(spec.name, a.owner_lock);
  if (a.json) {
    std::cout << nlohmann::json{{"cluster", to_json(spec)}, {"mpirun_arguments", mpirun_arguments(spec)}}.dump()
              << std::endl;
    return;
  }
  std::cout << "cluster " << describe(spec) << "\n"
            << "state: " << state_dir(spec.name).string() << "/cluster.json\n"
            << "run on it:  gradsweep cluster exec " << spec.name << " -- mpirun -np "
            << spec.nodes * spec.ranks_per_node << " ...\n"
            << "or:         mpirun " << shell_line(mpirun_arguments(spec)) << " -np "
            << spec.nodes * spec.ranks_per_node << " ...\n"
            << "remove it:  gradsweep cluster down " << spec.name << std::endl;
}

void link(const ClusterArgs& a) {
  const ClusterSpec spec = load_cluster(a.name);
  check_node(spec, a.node);
  const LinkChange change = parse_link_change(a.action, a.rate);
  set_node_link(spec, a.node, change);
  std::string what = a.action;
  if (change.kind == LinkChange::Kind::Shape) {
    ClusterSpec at = spec;
    at.link_bits_per_second = change.bits_per_second;
    char dilation[64];
    std::snprintf(dilation, sizeof dilation, "%.3g", spec.dilation);
    what = "shaped to " + format_bandwidth(change.bits_per_second) + " (on the wire " +
           format_bandwidth(at.shaped_bits_per_second()) + ", dilation " + dilation + ")";
  }
  std::cout << "cluster " << spec.name << ": node " << a.node << " (" << spec.node_name(a.node) << ") link " << what
            << std::endl;
}

void list(bool clean) {
  std::vector<std::string> leftovers;
  if (clean) {
    require_network_admin("cluster list --clean");
    ClusterLock lock;
    leftovers = sweep_leftovers();
    for (const std::string& n : leftovers) std::cout << "removed the leftovers of cluster " << n << "\n";
  }
  const std::vector<std::string> names = clusters_up();
  if (names.empty()) std::cout << "no cluster is up\n";
  for (const std::string& n : names) {
    const std::string links = describe_node_links(n);
    std::cout << describe(load_cluster(n)) << (links.empty() ? "" : "; " + links) << "\n";
  }
  if (!clean && find_on_path("ip").size() > 0) {
    for (const std::string& n : find_leftovers())
      std::cout << n << ": leftovers of a cluster that did not finish coming up or going down, or of a killed sweep; "
                << "`gradsweep cluster list --clean` removes them\n";
  }
  std::cout << std::flush;
}

// {"down": [nodes whose link carries nothing], "bytes": [{"from_node", "to_node"} per node]}: what an emulated
// cell records and what an elastic one counts as lost (link_state.hpp).
void link_state(const std::string& name) {
  const ClusterSpec spec = load_cluster(name);
  nlohmann::json bytes = nlohmann::json::array();
  for (const LinkBytes& b : link_bytes(spec)) bytes.push_back({{"from_node", b.from_node}, {"to_node", b.to_node}});
  std::cout << nlohmann::json{{"down", nodes_with_link_down(spec)}, {"bytes", bytes}}.dump() << std::endl;
}

void run_subcommand(const std::string& name, const ClusterArgs& a) {
  if (name == "up") {
    up(a);
  } else if (name == "down") {
    bring_down(a.name);
    std::cout << "cluster " << a.name << " removed" << std::endl;
  } else if (name == "list") {
    list(a.clean);
  } else if (name == "link") {
    link(a);
  } else if (name == "args") {
    std::cout << shell_line(mpirun_arguments(load_cluster(a.name))) << std::endl;
  } else if (name == "exec") {
    const ClusterSpec spec = load_cluster(a.name);
    require_network_admin("cluster exec");  // the agent enters the nodes' namespaces
    std::exit(exec_on_cluster(spec, a.command));
  } else if (name == "check") {
    require_network_admin(a.check_for);
  } else if (name == "link-state") {
    link_state(a.name);
  }
}

}  // namespace
}  // namespace gradsweep::cluster_cli

int main(int argc, char** argv) {
  CLI::App app{"gradsweep-cluster: the emulated cluster of `gradsweep cluster` (docs/cluster.md); needs root",
               "gradsweep-cluster"};
  app.require_subcommand(1);
  gradsweep::cluster_cli::add_cluster_subcommands(app, gradsweep::cluster_cli::run_subcommand);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 2;
  }
  return 0;
}
