// The kernel side of a cluster: a bridge in the root namespace, one network namespace per node joined to
// it by a veth pair, each pair shaped by tc in both directions. Everything through `ip` and `tc`.
#pragma once

#include "cluster/cluster_spec.hpp"

#include <string>
#include <vector>

namespace gradsweep::cluster {

// Makes every object of `spec`. On any failure removes what it made (by the cluster's prefix) and
// rethrows, so a failed `up` leaves nothing.
void create_network(const ClusterSpec& spec);

// Shapes both ends of node `node`'s veth (tc tbf, replacing what was there) at `bits_per_second`, the
// rate on the wire: the caller divides by the dilation.
void shape_node_link(const ClusterSpec& spec, int node, std::uint64_t bits_per_second);

struct NetworkObjects {
  std::vector<std::string> namespaces;  // from `ip netns list`
  std::vector<std::string> links;       // root-namespace links (bridges, veths), from `ip -o link show`
  bool empty() const { return namespaces.empty() && links.empty(); }
};

// The namespaces and root-namespace links whose names start with `prefix` ("gsc-" for all of gradsweep's).
NetworkObjects find_objects(const std::string& prefix);

// Kills what still runs inside the namespaces, deletes them (their veth ends and qdiscs go with them) and
// the links. Returns a line per object that could not be removed (empty: all gone).
std::vector<std::string> remove_objects(const std::string& prefix);

// Addresses and routes of the root namespace, to keep a new cluster's subnet off any network in use.
std::string root_addresses_and_routes();

}  // namespace gradsweep::cluster
