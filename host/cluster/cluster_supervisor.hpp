// The cluster tied to its owner's lifetime (cluster_owner.hpp). A sweep's cluster is brought up by a short-lived
// gradsweep-cluster for a sweep that holds an owner lock; if the sweep is killed (SIGKILL: no handler runs),
// its cluster would stay until the next `cluster up` or sweep swept it. A supervisor, started by `up
// --owner-lock`, waits on the owner's lock instead: the kernel releases it when the owner ends, however it
// ends, and the supervisor then removes the cluster if it is still there. When the owner has brought its
// cluster down itself, as it does when it ends normally or is interrupted, the supervisor finds nothing
// and exits.
#pragma once

#include <filesystem>
#include <string>

namespace gradsweep::cluster {

// Starts the supervisor of cluster `name`, owned by the holder of `owner_lock_file`, and returns at once: a
// process of its own session, with its standard streams on /dev/null and no other descriptor of this one,
// so that whoever reads this process's output is not kept waiting by it. Throws std::runtime_error if it
// cannot be started.
void supervise_owner(const std::string& name, const std::filesystem::path& owner_lock_file);

}  // namespace gradsweep::cluster
