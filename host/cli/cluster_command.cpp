#include "cli/cluster_command.hpp"

#include "cluster/bandwidth.hpp"
#include "cluster/cluster_exec.hpp"
#include "cluster/cluster_lifecycle.hpp"
#include "cluster/cluster_link.hpp"
#include "cluster/cluster_lock.hpp"
#include "cluster/cluster_network.hpp"
#include "cluster/cluster_spec.hpp"
#include "cluster/cluster_sweeper.hpp"
#include "cluster/mpi_access.hpp"
#include "cluster/system_command.hpp"
#include "cluster/time_dilation.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace gradsweep::cli {
namespace {

using namespace gradsweep::cluster;

struct UpArgs {
  std::string name, bandwidth, dilation = "1";
  int nodes = 0, ranks_per_node = 1;
};

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

void up(const UpArgs& a) {
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
  spec = bring_up(spec);
  std::cout << "cluster " << describe(spec) << "\n"
            << "state: " << state_dir(spec.name).string() << "/cluster.json\n"
            << "run on it:  gradsweep cluster exec " << spec.name << " -- mpirun -np "
            << spec.nodes * spec.ranks_per_node << " ...\n"
            << "or:         mpirun " << shell_line(mpirun_arguments(spec)) << " -np "
            << spec.nodes * spec.ranks_per_node << " ...\n"
            << "remove it:  gradsweep cluster down " << spec.name << std::endl;
}

struct LinkArgs {
  std::string name, action, rate;
  int node = -1;
};

void link(const LinkArgs& a) {
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

}  // namespace

void register_cluster_command(CLI::App& app) {
  CLI::App* cluster = app.add_subcommand("cluster", "An emulated multi-node cluster on this machine (needs root)");
  cluster->require_subcommand(1);

  auto up_args = std::make_shared<UpArgs>();
  CLI::App* up_cmd = cluster->add_subcommand("up", "Make N nodes (network namespaces) joined by shaped links");
  up_cmd->add_option("--nodes", up_args->nodes, "Number of nodes (1 to 64)")->required();
  up_cmd->add_option("--ranks-per-node", up_args->ranks_per_node, "MPI slots per node")->capture_default_str();
  up_cmd->add_option("--link-bandwidth", up_args->bandwidth, "Each node's link rate, both ways: 100mbit, 1Gbit, 10Gbit")
      ->required();
  up_cmd->add_option("--name", up_args->name, "Cluster name, 1-7 of [a-z0-9] (default: the first free c0, c1, ...)");
  up_cmd
      ->add_option("--dilation", up_args->dilation,
                   "Time-dilation factor F >= 1 (links shaped at rate / F), or auto to measure it")
      ->capture_default_str();
  up_cmd->callback([up_args] { up(*up_args); });

  auto down_name = std::make_shared<std::string>();
  CLI::App* down_cmd = cluster->add_subcommand("down", "Remove a cluster and everything it made");
  down_cmd->add_option("name", *down_name, "Cluster name")->required();
  down_cmd->callback([down_name] {
    bring_down(*down_name);
    std::cout << "cluster " << *down_name << " removed" << std::endl;
  });

  auto clean = std::make_shared<bool>(false);
  CLI::App* list_cmd = cluster->add_subcommand("list", "Clusters that are up, and leftovers of killed ones");
  list_cmd->add_flag("--clean", *clean, "Remove the leftovers of clusters whose `up` or `down` was killed");
  list_cmd->callback([clean] { list(*clean); });

  auto link_args = std::make_shared<LinkArgs>();
  CLI::App* link_cmd = cluster->add_subcommand(
      "link", "Fault one node's link while jobs run: gradsweep cluster link NAME NODE down|up|shape RATE");
  link_cmd->add_option("name", link_args->name, "Cluster name")->required();
  link_cmd->add_option("node", link_args->node, "Node index, 0 to nodes-1")->required();
  link_cmd
      ->add_option("action", link_args->action,
                   "down (cut: its switch port goes dark), up (restore), shape (re-shape both directions)")
      ->required();
  link_cmd->add_option("rate", link_args->rate, "With shape: the node's new link rate, as --link-bandwidth (10Mbit)");
  link_cmd->callback([link_args] { link(*link_args); });

  auto args_name = std::make_shared<std::string>();
  CLI::App* args_cmd = cluster->add_subcommand("args", "Print the mpirun arguments that put a job on a cluster");
  args_cmd->add_option("name", *args_name, "Cluster name")->required();
  args_cmd->callback([args_name] { std::cout << shell_line(mpirun_arguments(load_cluster(*args_name))) << std::endl; });

  auto exec_name = std::make_shared<std::string>();
  auto command = std::make_shared<std::vector<std::string>>();
  CLI::App* exec_cmd = cluster->add_subcommand(
      "exec",
      "Run a command (e.g. mpirun -np N ...) with the cluster's MPI settings: gradsweep cluster exec NAME -- CMD");
  exec_cmd->add_option("name", *exec_name, "Cluster name")->required();
  exec_cmd->add_option("command", *command, "The command, after --")->required();
  exec_cmd->callback([exec_name, command] {
    const ClusterSpec spec = load_cluster(*exec_name);
    require_network_admin("cluster exec");  // the agent enters the nodes' namespaces
    std::exit(exec_on_cluster(spec, *command));
  });
}

}  // namespace gradsweep::cli
