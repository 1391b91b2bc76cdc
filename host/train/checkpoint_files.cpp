#include "train/checkpoint_files.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <c10/util/Exception.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace gradsweep::train {
namespace fs = std::filesystem;

namespace {

// Writes all of [data, data + size) to `fd`; returns 0 or the errno of the failure.
int write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : ENOSPC;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return 0;
}

// Creates `file`, lets `fill` write into it (returning 0 or an errno), fsyncs and closes it; throws
// WriteFailure with the first error.
template <typename Fill>
void write_file(const fs::path& file, Fill&& fill) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw WriteFailure(file, errno);
  int failure = fill(fd);
  if (failure == 0 && ::fsync(fd) != 0) failure = errno;
  if (::close(fd) != 0 && failure == 0) failure = errno;
  if (failure != 0) throw WriteFailure(file, failure);
}

}  // namespace

WriteFailure::WriteFailure(const fs::path& file, int e)
    : std::runtime_error(file.filename().string() + ": " + std::strerror(e)), error(e) {}

// LibTorch's own file writer cannot be used on a full disk: it throws again from PyTorchStreamWriter's
// destructor, which terminates the process. The writer it is given here always reports success and
// remembers the first failure instead.
void write_archive(torch::serialize::OutputArchive& archive, const fs::path& file) {
  write_file(file, [&](int fd) {
    int failure = 0;
    archive.save_to([&](const void* data, std::size_t size) -> std::size_t {
      if (failure == 0) failure = write_all(fd, static_cast<const char*>(data), size);
      return size;
    });
    return failure;
  });
}

void write_text(const fs::path& file, const std::string& text) {
  write_file(file, [&](int fd) { return write_all(fd, text.data(), text.size()); });
}

void read_archive(torch::serialize::InputArchive& archive, const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) throw std::runtime_error("checkpoint file " + file.string() + " is missing");
  try {
    archive.load_from(file.string());
  } catch (const c10::Error& e) {
    throw std::runtime_error("cannot read checkpoint file " + file.string() +
                             " (truncated or not a checkpoint?): " + e.what_without_backtrace());
  }
}

std::string free_space(const fs::path& dir) {
  struct statvfs fs_info {};
  if (::statvfs(dir.c_str(), &fs_info) != 0) return "";
  char text[96];
  std::snprintf(text, sizeof text, "the disk has %.1f MB free of %.1f MB",
                static_cast<double>(fs_info.f_bavail) * fs_info.f_frsize / 1e6,
                static_cast<double>(fs_info.f_blocks) * fs_info.f_frsize / 1e6);
  return text;
}

}  // namespace gradsweep::train
