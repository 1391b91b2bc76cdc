#include "util/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace gradsweep::host {
namespace fs = std::filesystem;

void write_file_atomically(const fs::path& path, std::string_view contents) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  const fs::path temp = path.string() + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(temp.string() + ": cannot create: " + std::strerror(errno));
  std::size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      fs::remove(temp);
      throw std::runtime_error(temp.string() + ": write failed: " + std::strerror(err));
    }
    done += static_cast<std::size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
  fs::rename(temp, path);
}

void replace_directory(const fs::path& staged, const fs::path& target) {
  const fs::path old = target.string() + ".old";
  fs::remove_all(old);
  if (fs::exists(target)) fs::rename(target, old);
  fs::rename(staged, target);
  fs::remove_all(old);
}

}  // namespace gradsweep::host
