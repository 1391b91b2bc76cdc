// A cluster that lives only as long as the process that made it (a sweep's cell: launcher_emulated.hpp).
// That process holds an flock on the cluster's owner.lock from before its cluster.json exists until it has
// brought the cluster down. The kernel drops the lock when the process dies, SIGKILL included, so a
// complete cluster whose owner.lock nobody holds is a leftover like a half-made one (cluster_sweeper.hpp),
// and the next `cluster up` (or sweep) removes it. Clusters made by `gradsweep cluster up` have no owner:
// they stay until `cluster down`.
#pragma once

#include <filesystem>
#include <string>

namespace gradsweep::cluster {

std::filesystem::path owner_lock_path(const std::string& name);

class OwnerLock {
 public:
  // Creates and locks the state directory's owner.lock; throws std::runtime_error if it cannot.
  explicit OwnerLock(const std::string& name);
  ~OwnerLock();
  OwnerLock(const OwnerLock&) = delete;
  OwnerLock& operator=(const OwnerLock&) = delete;

 private:
  int fd_ = -1;
};

// True when cluster `name` has an owner.lock that no process holds: its owner has died.
bool owner_gone(const std::string& name);

}  // namespace gradsweep::cluster
