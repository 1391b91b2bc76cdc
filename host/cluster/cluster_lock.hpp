// One lock for every change to gradsweep's clusters on this machine: two `cluster up` at once cannot pick
// the same subnet, and a sweep never mistakes a cluster being made for a killed one's leftovers. flock is
// released by the kernel when its holder dies, SIGKILL included.
#pragma once

namespace gradsweep::cluster {

class ClusterLock {
 public:
  ClusterLock();  // blocks until held; throws std::runtime_error if the lock file cannot be opened
  ~ClusterLock();
  ClusterLock(const ClusterLock&) = delete;
  ClusterLock& operator=(const ClusterLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace gradsweep::cluster
