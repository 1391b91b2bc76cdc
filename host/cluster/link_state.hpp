// Which nodes of a cluster that is up can no longer be reached over their link: what an elastic cell
// (host/experiment/elastic_cell.hpp) counts as lost besides the ranks its failure names.
#pragma once

#include "cluster/cluster_spec.hpp"

#include <vector>

namespace gradsweep::cluster {

// The nodes whose link carries nothing: the bridge's end of their veth has no carrier (LOWER_UP), whichever end
// was set down (`gradsweep cluster link NAME NODE down`, `ip link set ... down` on either side) or removed.
// Sorted; empty when every link is up or the cluster is gone.
std::vector<int> nodes_with_link_down(const ClusterSpec& spec);

}  // namespace gradsweep::cluster
