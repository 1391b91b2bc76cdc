#include "cluster_cli/cluster_command.hpp"

#include <memory>

namespace gradsweep::cluster_cli {
namespace {

// A subcommand that is not in `gradsweep cluster --help` nor in docs/reference: for programs (the sweep's
// launcher), documented in docs/cluster.md.
void hide(CLI::App* command) { command->group(""); }

void add_up(CLI::App& cluster, const std::shared_ptr<ClusterArgs>& a, const ClusterHandler& handler) {
  CLI::App* up = cluster.add_subcommand("up", "Make N nodes (network namespaces) joined by shaped links");
  up->add_option("--nodes", a->nodes, "Number of nodes (1 to 64)")->required();
  up->add_option("--ranks-per-node", a->ranks_per_node, "MPI slots per node")->capture_default_str();
  up->add_option("--link-bandwidth", a->bandwidth, "Each node's link rate, both ways: 100mbit, 1Gbit, 10Gbit")
      ->required();
  up->add_option("--name", a->name, "Cluster name, 1-7 of [a-z0-9] (default: the first free c0, c1, ...)");
  up->add_option("--dilation", a->dilation,
                 "Time-dilation factor F >= 1 (links shaped at rate / F), or auto to measure it")
      ->capture_default_str();
  // The sweep's: the resolved cluster as JSON, owned by the process that holds the lock file (cluster_owner.hpp),
  // with where its dilation came from when the sweep decided it.
  up->add_flag("--json", a->json, "Print the cluster and its mpirun arguments as JSON")->group("");
  up->add_option("--owner-lock", a->owner_lock, "A file its owner holds locked (flock)")->group("");
  up->add_option("--dilation-source", a->dilation_source, "Where the dilation came from")->group("");
  up->callback([a, handler] { handler("up", *a); });
}

void add_link(CLI::App& cluster, const std::shared_ptr<ClusterArgs>& a, const ClusterHandler& handler) {
  CLI::App* link = cluster.add_subcommand(
      "link", "Fault one node's link while jobs run: gradsweep cluster link NAME NODE down|up|shape RATE");
  link->add_option("name", a->name, "Cluster name")->required();
  link->add_option("node", a->node, "Node index, 0 to nodes-1")->required();
  link->add_option("action", a->action,
                   "down (cut: its switch port goes dark), up (restore), shape (re-shape both directions)")
      ->required();
  link->add_option("rate", a->rate, "With shape: the node's new link rate, as --link-bandwidth (10Mbit)");
  link->callback([a, handler] { handler("link", *a); });
}

// What a sweep asks besides `up` and `down` (launcher_emulated.hpp), hidden: whether clusters can be made here,
// and the state of a cluster's links.
void add_sweep_queries(CLI::App& cluster, const std::shared_ptr<ClusterArgs>& a, const ClusterHandler& handler) {
  CLI::App* check = cluster.add_subcommand("check", "Exit 0 if this process may make clusters, else say why");
  check->add_option("--for", a->check_for, "The action the message names");
  check->callback([a, handler] { handler("check", *a); });
  hide(check);

  CLI::App* links = cluster.add_subcommand("link-state", "Each node's link: down or up, bytes both ways, as JSON");
  links->add_option("name", a->name, "Cluster name")->required();
  links->callback([a, handler] { handler("link-state", *a); });
  hide(links);
}

}  // namespace

void add_cluster_subcommands(CLI::App& cluster, const ClusterHandler& handler) {
  // One set of arguments for all: CLI11 runs only the callback of the subcommand given.
  auto a = std::make_shared<ClusterArgs>();
  add_up(cluster, a, handler);

  CLI::App* down = cluster.add_subcommand("down", "Remove a cluster and everything it made");
  down->add_option("name", a->name, "Cluster name")->required();
  down->callback([a, handler] { handler("down", *a); });

  CLI::App* list = cluster.add_subcommand("list", "Clusters that are up, and leftovers of killed ones");
  list->add_flag("--clean", a->clean, "Remove the leftovers of clusters whose `up` or `down` was killed");
  list->callback([a, handler] { handler("list", *a); });

  add_link(cluster, a, handler);

  CLI::App* args = cluster.add_subcommand("args", "Print the mpirun arguments that put a job on a cluster");
  args->add_option("name", a->name, "Cluster name")->required();
  args->callback([a, handler] { handler("args", *a); });

  CLI::App* exec = cluster.add_subcommand(
      "exec",
      "Run a command (e.g. mpirun -np N ...) with the cluster's MPI settings: gradsweep cluster exec NAME -- CMD");
  exec->add_option("name", a->name, "Cluster name")->required();
  exec->add_option("command", a->command, "The command, after --")->required();
  exec->callback([a, handler] { handler("exec", *a); });

  add_sweep_queries(cluster, a, handler);
}

}  // namespace gradsweep::cluster_cli
