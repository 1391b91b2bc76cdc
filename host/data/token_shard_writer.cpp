#include "data/token_shard_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "data/token_shard.hpp"

namespace gradsweep::data {
namespace {

// Tokens are buffered and written in blocks of this many bytes: a bounded, small cost per shard.
constexpr size_t kBufferBytes = size_t{1} << 20;

void write_all(int fd, const char* p, size_t left, off_t offset, const std::filesystem::path& path) {
  while (left > 0) {
    const ssize_t n = ::pwrite(fd, p, left, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(path.string() + ": write failed: " + std::strerror(errno));
    }
    p += n;
    offset += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace

TokenShardWriter::TokenShardWriter(std::filesystem::path path, int token_bytes)
    : path_(std::move(path)), token_bytes_(token_bytes) {
  if (token_bytes != 2 && token_bytes != 4)
    throw std::invalid_argument(path_.string() + ": token width " + std::to_string(token_bytes) +
                                " bytes is neither 2 (uint16) nor 4 (uint32)");
  const std::filesystem::path dir = path_.has_parent_path() ? path_.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir.string() + ": cannot create directory: " + ec.message());
  // The pid keeps two processes writing one shard from clobbering each other's temporary file.
  temp_ = path_.string() + ".tmp." + std::to_string(::getpid());
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(temp_.string() + ": cannot create: " + std::strerror(errno));
  buffer_.reserve(kBufferBytes);
  buffer_.assign(static_cast<size_t>(kShardHeaderBytes), '\0');  // the header, filled in by finish()
}

TokenShardWriter::~TokenShardWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!finished_) {
    std::error_code ignored;
    std::filesystem::remove(temp_, ignored);
  }
}

void TokenShardWriter::fail(const std::string& what) { throw std::invalid_argument(path_.string() + ": " + what); }

void TokenShardWriter::append(int64_t token) {
  const int64_t limit = token_bytes_ == 2 ? kShardMaxVocab : kShardMaxVocab32;
  if (token < 0 || token >= limit)
    fail("token " + std::to_string(token) + " at position " + std::to_string(count_) + " does not fit the " +
         (token_bytes_ == 2 ? "uint16 shard format (0..65535)" : "uint32 shard format (0..4294967295)"));
  if (count_ == kShardMaxTokens)
    fail("more than " + std::to_string(kShardMaxTokens) +
         " tokens do not fit one shard (the header count is int32): split the data into shards");
  if (buffer_.size() + static_cast<size_t>(token_bytes_) > kBufferBytes) flush();
  if (token_bytes_ == 2) {
    const auto u = static_cast<uint16_t>(token);
    buffer_.insert(buffer_.end(), reinterpret_cast<const char*>(&u), reinterpret_cast<const char*>(&u) + 2);
  } else {
    const auto u = static_cast<uint32_t>(token);
    buffer_.insert(buffer_.end(), reinterpret_cast<const char*>(&u), reinterpret_cast<const char*>(&u) + 4);
  }
  if (token > max_token_) max_token_ = token;
  ++count_;
}

void TokenShardWriter::flush() {
  const off_t end = ::lseek(fd_, 0, SEEK_END);
  write_all(fd_, buffer_.data(), buffer_.size(), end < 0 ? 0 : end, temp_);
  buffer_.clear();
}

void TokenShardWriter::finish() {
  flush();
  int32_t header[kShardHeaderInts] = {};
  header[0] = token_bytes_ == 2 ? kShardMagic : kShardMagic32;
  header[1] = token_bytes_ == 2 ? kShardVersion : kShardVersion32;
  header[2] = static_cast<int32_t>(count_);
  write_all(fd_, reinterpret_cast<const char*>(header), sizeof(header), 0, temp_);
  if (::fsync(fd_) != 0) throw std::runtime_error(temp_.string() + ": fsync failed: " + std::strerror(errno));
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw std::runtime_error(temp_.string() + ": close failed: " + std::strerror(errno));
  if (::rename(temp_.c_str(), path_.c_str()) != 0)
    throw std::runtime_error(path_.string() + ": rename failed: " + std::strerror(errno));
  finished_ = true;
  // Without this the rename may still be only in the page cache; best effort (some filesystems refuse it).
  const std::filesystem::path dir = path_.has_parent_path() ? path_.parent_path() : std::filesystem::path(".");
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace gradsweep::data
