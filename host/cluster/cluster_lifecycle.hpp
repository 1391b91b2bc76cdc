// Bringing a cluster up and down as one step each: checks first, then the objects, the MPI access files and
// last the state file, so that a cluster with a state file is complete and anything without one is a
// leftover (cluster_sweeper.hpp).
#pragma once

#include "cluster/cluster_owner.hpp"
#include "cluster/cluster_spec.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace gradsweep::cluster {

// Makes the cluster. An empty spec.name picks the first free "c0", "c1", ...; the subnet is the first
// 10.213.k.0/24 used by no other cluster and by no address or route of this machine. Cleans leftovers of
// killed clusters first. On failure nothing of it is left and the error says what failed.
// With `owner`, the cluster belongs to this process (cluster_owner.hpp): *owner holds its owner.lock from
// before the cluster is complete, and once it is released (or the process dies) the cluster is a leftover.
// With `owner_lock_file` (gradsweep-cluster's `up --owner-lock PATH`), the cluster belongs to the process that
// holds that file locked instead (record_owner), from before the cluster is complete.
ClusterSpec bring_up(ClusterSpec spec, std::unique_ptr<OwnerLock>* owner = nullptr,
                     const std::filesystem::path& owner_lock_file = {});

// Removes the cluster `name` (a complete one or a leftover). Throws if there is nothing of that name, or
// if something would not go.
void bring_down(const std::string& name);

}  // namespace gradsweep::cluster
