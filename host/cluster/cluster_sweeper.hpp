// Leftovers: objects of a cluster whose `up` never finished (killed, or crashed before its rollback) or
// whose state vanished. They are found by the gradsweep prefix alone, so nothing of the dead process is
// needed. Call with the ClusterLock held: a cluster being made holds it, so it is never taken for one.
#pragma once

#include <string>
#include <vector>

namespace gradsweep::cluster {

// Names of clusters with namespaces, links, /etc/hosts entries or a state directory but no state file, and
// of complete clusters whose owning process has died (cluster_owner.hpp).
std::vector<std::string> find_leftovers();

// Removes every object, host entry and state directory of cluster `name`. Returns what could not be
// removed, one line each (empty: all gone).
std::vector<std::string> remove_cluster(const std::string& name);

// Removes every leftover; returns the names cleaned. Throws if something would not go.
std::vector<std::string> sweep_leftovers();

}  // namespace gradsweep::cluster
