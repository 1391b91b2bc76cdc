#include "cluster/cluster_owner.hpp"

#include "cluster/cluster_spec.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace gradsweep::cluster {

std::filesystem::path owner_lock_path(const std::string& name) { return state_dir(name) / "owner.lock"; }

OwnerLock::OwnerLock(const std::string& name) {
  const std::string path = owner_lock_path(name).string();
  // O_CLOEXEC: an mpirun started by the owner must not keep the lock alive after the owner has died.
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd_);
    throw std::runtime_error("cannot lock " + path + ": " + std::strerror(err));
  }
}

OwnerLock::~OwnerLock() {
  if (fd_ >= 0) ::close(fd_);
}

bool owner_gone(const std::string& name) {
  // flock conflicts between open file descriptions, so the owner itself asking through a fresh one sees
  // its own lock as held.
  const int fd = ::open(owner_lock_path(name).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // no owner: a cluster of `gradsweep cluster up`
  const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  ::close(fd);
  return free;
}

}  // namespace gradsweep::cluster
