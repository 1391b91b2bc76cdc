// A cluster that lives only as long as the process that made it (a sweep's cell: launcher_emulated.hpp).
// That process holds an flock from before the cluster's cluster.json exists until it has brought the cluster
// down. The kernel drops the lock when the process dies, SIGKILL included, so a complete cluster whose lock
// nobody holds is a leftover like a half-made one (cluster_sweeper.hpp), and the next `cluster up` (or sweep)
// removes it. Clusters made by `gradsweep cluster up` have no owner: they stay until `cluster down`.
//
// Two ways to hold it. In-process (OwnerLock): the state directory's owner.lock, locked by the process that
// calls bring_up itself. Across processes (OwnerLockFile): the sweep, which never brings clusters up itself,
// creates and locks a file of its own and passes its path to `gradsweep-cluster up --owner-lock PATH`, which
// records the path in the state directory's `owner` file; the cluster is then the sweep's, not the short-lived
// gradsweep-cluster's.
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

// The owner's side when another process brings the cluster up: a fresh file in the temporary directory (no
// privileges needed), locked until destroyed. Not inherited by child processes: an mpirun the owner starts must
// not keep the cluster owned after the owner has died.
inline constexpr const char* kOwnerLockFilePrefix = "gradsweep-cluster-owner-";

class OwnerLockFile {
 public:
  OwnerLockFile();   // throws std::runtime_error if the file cannot be made or locked
  ~OwnerLockFile();  // removes the file, then releases the lock
  OwnerLockFile(const OwnerLockFile&) = delete;
  OwnerLockFile& operator=(const OwnerLockFile&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

// Makes the process that holds `lock_file` locked cluster `name`'s owner (the state directory's `owner` file
// names it). Throws std::runtime_error naming --owner-lock if no process holds it: the cluster would be a
// leftover from the start.
void record_owner(const std::string& name, const std::filesystem::path& lock_file);

// Removes the lock file that cluster `name`'s `owner` names when no process holds it any more (its owner was
// killed before it could) and it is one an OwnerLockFile made; called as the cluster's state goes.
void forget_owner(const std::string& name);

// True when cluster `name` has an owner (owner.lock, or the file its `owner` names) that no process holds
// locked any more, or whose file is gone: its owner has died.
bool owner_gone(const std::string& name);

}  // namespace gradsweep::cluster
