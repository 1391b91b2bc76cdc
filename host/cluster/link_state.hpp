// The state of a cluster's links, read from the kernel: which nodes can no longer be reached over their
// link (what an elastic cell, host/experiment/launch/elastic_cell.hpp, counts as lost besides the ranks its
// failure names), and how many bytes crossed each link (what a cell's summary.json records per node).
#pragma once

#include "cluster/cluster_spec.hpp"

#include <cstdint>
#include <vector>

namespace gradsweep::cluster {

// The nodes whose link carries nothing: the bridge's end of their veth has no carrier (LOWER_UP), whichever end
// was set down (`gradsweep cluster link NAME NODE down`, `ip link set ... down` on either side) or removed.
// Sorted; empty when every link is up or the cluster is gone.
std::vector<int> nodes_with_link_down(const ClusterSpec& spec);

// Bytes that crossed one node's link, both ways, at the link's own layer (Ethernet frames: what tc shapes,
// so TCP/IP headers and retransmissions count, as they do on a real network).
struct LinkBytes {
  std::uint64_t from_node = 0;  // sent by the node
  std::uint64_t to_node = 0;    // delivered to the node
};

// Each node's counters now, from the bridge's end of its veth (/sys/class/net/<veth>/statistics: what the
// bridge received from the node, and sent to it). Counters of a link that is gone read 0. Subtract two
// readings for what a job moved.
std::vector<LinkBytes> link_bytes(const ClusterSpec& spec);

}  // namespace gradsweep::cluster
