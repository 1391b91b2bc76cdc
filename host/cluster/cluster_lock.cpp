#include "cluster/cluster_lock.hpp"

#include "cluster/cluster_spec.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace gradsweep::cluster {

ClusterLock::ClusterLock() {
  std::filesystem::create_directories(state_root());
  const std::string path = (state_root() / ".lock").string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  while (::flock(fd_, LOCK_EX) != 0)
    if (errno != EINTR) throw std::runtime_error("cannot lock " + path + ": " + std::strerror(errno));
}

ClusterLock::~ClusterLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

}  // namespace gradsweep::cluster
