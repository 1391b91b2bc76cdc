// Faults on a running cluster's network (`gradsweep cluster link NAME NODE down|up|shape RATE`): one node's
// link cut, restored or re-shaped while jobs run on it. A cut is the switch port going dark: the veth end on
// the bridge is set down, so the node's eth0 loses its carrier and every packet in either direction is
// dropped without an error, as when a cable or a switch port fails (TCP retransmits into silence; MPI sees a
// peer that stops answering, not a connection refused). The node keeps its address and routes, and `up`
// brings the carrier back with the node's shaping intact. The change is recorded in cluster.json under
// "node_links" so that `cluster list` shows which links are not as brought up.
#pragma once

#include "cluster/cluster_spec.hpp"

#include <cstdint>
#include <string>

namespace gradsweep::cluster {

struct LinkChange {
  enum class Kind { Down, Up, Shape };
  Kind kind = Kind::Up;
  std::uint64_t bits_per_second = 0;  // Shape only: the rate asked for, before the cluster's dilation
};

// Parses the verb's arguments: "down", "up", or "shape" with RATE (as --link-bandwidth). Throws
// std::invalid_argument saying what is wrong.
LinkChange parse_link_change(const std::string& action, const std::string& rate);

// Throws std::invalid_argument naming the valid range when `node` is not one of the cluster's.
void check_node(const ClusterSpec& spec, int node);

// Applies `change` to node `node` of the cluster (its kernel objects) and records it in cluster.json.
// Shape: both ends of the node's veth at rate / the cluster's dilation, as `up` shapes them.
void set_node_link(const ClusterSpec& spec, int node, const LinkChange& change);

// "node 3 down; node 1 shaped at 10Mbit" for the nodes whose link was changed, "" when none was.
std::string describe_node_links(const std::string& name);

}  // namespace gradsweep::cluster
