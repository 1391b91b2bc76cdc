#include "cluster/cluster_owner.hpp"

#include "cluster/cluster_spec.hpp"
#include "util/atomic_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace gradsweep::cluster {
namespace {

std::filesystem::path owner_record_path(const std::string& name) { return state_dir(name) / "owner"; }

// Whether some process holds `path` locked. flock conflicts between open file descriptions, so the owner
// itself asking through a fresh one sees its own lock as held. A file that cannot be opened: `missing`.
bool lock_held(const std::filesystem::path& path, bool missing) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return missing;
  const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  ::close(fd);
  return !free;
}

}  // namespace

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

OwnerLockFile::OwnerLockFile() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / (std::string(kOwnerLockFilePrefix) + "XXXXXX")).string();
  fd_ = ::mkostemp(pattern.data(), O_CLOEXEC);
  if (fd_ < 0) throw std::runtime_error("cannot create " + pattern + ": " + std::strerror(errno));
  path_ = pattern;
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd_);
    ::unlink(path_.c_str());
    throw std::runtime_error("cannot lock " + path_.string() + ": " + std::strerror(err));
  }
}

OwnerLockFile::~OwnerLockFile() {
  ::unlink(path_.c_str());
  ::close(fd_);
}

void record_owner(const std::string& name, const std::filesystem::path& lock_file) {
  if (!lock_file.is_absolute() || !lock_held(lock_file, false))
    throw std::runtime_error("--owner-lock " + lock_file.string() +
                             ": no process holds this file locked (it must be an absolute path, locked with flock "
                             "by the process the cluster belongs to)");
  util::write_file_atomically(owner_record_path(name), lock_file.string() + "\n");
}

void forget_owner(const std::string& name) {
  std::ifstream record(owner_record_path(name));
  std::string lock_file;
  if (!record || !std::getline(record, lock_file)) return;
  // Only a file of ours: the path came from a command line, and removing it is root's doing.
  const std::filesystem::path path(lock_file);
  if (path.filename().string().rfind(kOwnerLockFilePrefix, 0) != 0 || lock_held(path, true)) return;
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
}

bool owner_gone(const std::string& name) {
  std::ifstream record(owner_record_path(name));
  std::string lock_file;
  if (record && std::getline(record, lock_file)) return !lock_held(lock_file, false);
  return !lock_held(owner_lock_path(name), true);  // no owner.lock: a cluster of `gradsweep cluster up`
}

}  // namespace gradsweep::cluster
