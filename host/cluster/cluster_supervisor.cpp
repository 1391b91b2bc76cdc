#include "cluster/cluster_supervisor.hpp"

#include "cluster/cluster_lifecycle.hpp"
#include "cluster/cluster_owner.hpp"
#include "cluster/cluster_spec.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace gradsweep::cluster {
namespace {

// The supervisor itself: blocks until the owner's lock is free, then removes what its owner left.
[[noreturn]] void supervise(const std::string& name, const std::filesystem::path& owner_lock_file) {
  const int fd = ::open(owner_lock_file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
    }
    // Released at once: while this process held it, the owner would look alive to a sweeper.
    ::close(fd);
  }
  try {
    if (std::filesystem::exists(state_dir(name) / "cluster.json") && owner_gone(name)) bring_down(name);
  } catch (const std::exception&) {
    // Another process removed it first, or something would not go: the next `cluster up` sweeps what is left.
  }
  ::_exit(0);
}

}  // namespace

void supervise_owner(const std::string& name, const std::filesystem::path& owner_lock_file) {
  const pid_t child = ::fork();
  if (child < 0)
    throw std::runtime_error(std::string("cannot start the cluster's supervisor: fork: ") + std::strerror(errno));
  if (child == 0) {
    // The intermediate child: a new session, then the supervisor as its child, which init adopts.
    ::setsid();
    const pid_t supervisor = ::fork();
    if (supervisor != 0) ::_exit(supervisor < 0 ? 1 : 0);
    const int null = ::open("/dev/null", O_RDWR);
    for (int stream = 0; stream < 3; ++stream) ::dup2(null, stream);
    ::syscall(SYS_close_range, 3U, ~0U, 0U);
    supervise(name, owner_lock_file);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("cannot start the cluster's supervisor: fork failed in its session");
}

}  // namespace gradsweep::cluster
