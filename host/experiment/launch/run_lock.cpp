#include "experiment/launch/run_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace gradsweep::experiment {

RunLock::RunLock(const std::filesystem::path& out_dir) {
  std::filesystem::create_directories(out_dir);
  const std::filesystem::path file = out_dir / ".lock";
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(file.string() + ": cannot open: " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    char buffer[32] = {};
    const ssize_t n = ::pread(fd_, buffer, sizeof buffer - 1, 0);
    std::string holder = n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "unknown";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error(out_dir.string() + " is in use by another `gradsweep run` (pid " + holder +
                             "); wait for it to end, or use another --out");
  }
  // Only the holder writes its pid, so a refused driver never changes what the file says.
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) == 0) {
    [[maybe_unused]] const ssize_t written = ::pwrite(fd_, pid.data(), pid.size(), 0);
  }
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

}  // namespace gradsweep::experiment
