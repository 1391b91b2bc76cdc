#pragma once
// The cluster subcommands (up, down, list, link, args, exec, and the hidden ones a sweep uses), defined once
// for both executables that carry them: gradsweep-cluster (cluster_main.cpp), which runs them and is the only
// process that needs root, and gradsweep's `cluster`, which hands its arguments to gradsweep-cluster
// (cluster_forward.hpp), whose help and reference pages come from these same definitions. See
// docs/cluster.md.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace gradsweep::cluster_cli {

// Everything the cluster subcommands parse; each subcommand fills the fields it has.
struct ClusterArgs {
  std::string name;                   // every subcommand's cluster name (`up --name`: empty picks one)
  int nodes = 0, ranks_per_node = 1;  // up
  std::string bandwidth, dilation = "1", dilation_source, owner_lock;  // up
  bool json = false;                        // up: print JSON for a program instead of lines for a person
  bool clean = false;                       // list
  int node = -1;                            // link
  std::string action, rate;                 // link
  std::vector<std::string> command;         // exec
  std::string check_for = "cluster check";  // check: the action the message names
};

// Runs the subcommand `name` ("up", "down", ...) once CLI11 has parsed `args`.
using ClusterHandler = std::function<void(const std::string& name, const ClusterArgs& args)>;

// Adds the cluster subcommands to `cluster` (gradsweep-cluster's app itself, or gradsweep's `cluster`), each
// calling `handler` when it is the one given.
void add_cluster_subcommands(CLI::App& cluster, const ClusterHandler& handler);

}  // namespace gradsweep::cluster_cli
