#include "util/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace gradsweep::util {
namespace {

std::runtime_error system_error(const std::filesystem::path& path, const char* what) {
  return std::runtime_error(path.string() + ": " + what + ": " + std::strerror(errno));
}

// Closes the descriptor and removes the temporary file unless the write completed.
struct TempFile {
  std::filesystem::path path;
  int fd = -1;
  bool committed = false;
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (!committed) {
      std::error_code ignored;
      std::filesystem::remove(path, ignored);
    }
  }
};

}  // namespace

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir.string() + ": cannot create directory: " + ec.message());

  // The pid in the name keeps two processes writing the same file (two ranks, two sweep cells) from
  // clobbering each other's temporary file; the last rename wins with a complete file either way.
  TempFile tmp{path.string() + ".tmp." + std::to_string(::getpid())};
  tmp.fd = ::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (tmp.fd < 0) throw system_error(tmp.path, "cannot create");

  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(tmp.fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw system_error(tmp.path, "write failed");
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(tmp.fd) != 0) throw system_error(tmp.path, "fsync failed");
  if (::close(tmp.fd) != 0) {
    tmp.fd = -1;
    throw system_error(tmp.path, "close failed");
  }
  tmp.fd = -1;
  if (::rename(tmp.path.c_str(), path.c_str()) != 0) throw system_error(path, "rename failed");
  tmp.committed = true;

  // Without this the rename may still be only in the page cache; best effort (some filesystems refuse it).
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

void replace_directory(const std::filesystem::path& staged, const std::filesystem::path& target) {
  const std::filesystem::path old = target.string() + ".old";
  std::filesystem::remove_all(old);
  if (std::filesystem::exists(target)) std::filesystem::rename(target, old);
  std::filesystem::rename(staged, target);
  std::filesystem::remove_all(old);
}

}  // namespace gradsweep::util
