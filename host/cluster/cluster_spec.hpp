// What an emulated cluster is: its name, nodes, ranks per node, link rate and time dilation, and the
// names of every kernel object it owns. All names derive from one prefix so that anything a killed
// gradsweep left behind is found again by name alone (cluster_sweeper.hpp).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::cluster {

// Every namespace, link and /etc/hosts entry gradsweep makes starts with this.
inline constexpr const char* kPrefix = "gsc-";
// Linux interface names hold 15 characters: "gsc-" + name + "-v" + two digits leaves 7 for the name.
inline constexpr std::size_t kMaxNameLength = 7;
inline constexpr int kMaxNodes = 64;

struct ClusterSpec {
  std::string name;
  int nodes = 0;
  int ranks_per_node = 1;
  std::uint64_t link_bits_per_second = 0;  // the emulated cluster's link rate, as asked
  double dilation = 1.0;                   // time-dilation factor F >= 1: links are shaped at rate / F
  std::string dilation_source = "fixed";   // "fixed" (--dilation F) or "measured" (--dilation auto)
  int subnet_index = -1;                   // the cluster's 10.213.<index>.0/24, chosen at `up`

  std::uint64_t shaped_bits_per_second() const;
  std::string subnet() const;                // "10.213.7.0/24"
  std::string node_address(int node) const;  // 10.213.7.<node + 1>
  std::string bridge_address() const;        // 10.213.7.254: mpirun in the root namespace talks from here
  std::string node_name(int node) const;     // namespace and host name: gsc-<name>-n<node>
  std::string bridge_name() const;           // gsc-<name>-br
  std::string veth_name(int node) const;     // the bridge's end, in the root namespace: gsc-<name>-v<node>
  std::string peer_name(int node) const;     // the node's end until it moves in and becomes eth0
  std::string object_prefix() const;         // gsc-<name>-
};

// Throws std::invalid_argument naming the option (--name, --nodes, ...) when the spec cannot be made.
void validate(const ClusterSpec& spec);
void validate_name(const std::string& name);

// Where clusters keep their state: /run/gradsweep/clusters (tmpfs: gone after a reboot, like the objects).
std::filesystem::path state_root();
std::filesystem::path state_dir(const std::string& name);

nlohmann::json to_json(const ClusterSpec& spec);
ClusterSpec spec_from_json(const nlohmann::json& j);

// The state file of a cluster that is up; throws std::runtime_error naming the cluster if there is none.
ClusterSpec load_cluster(const std::string& name);
// Names of the clusters with a complete state file, sorted.
std::vector<std::string> clusters_up();

}  // namespace gradsweep::cluster
