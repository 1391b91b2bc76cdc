#include "data/token_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "data/npy_header.hpp"
#include "data/token_shard.hpp"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "pre-tokenized inputs are little-endian and are read as they are: add byte swapping for a big-endian target"
#endif

namespace gradsweep::data {

TokenFileReader::TokenFileReader(std::filesystem::path path, InputKind kind, int raw_token_bytes)
    : path_(std::move(path)) {
  if (!holds_tokens(kind))
    throw std::invalid_argument(path_.string() + ": " + input_kind_name(kind) + " is not a kind of token file");
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw std::runtime_error(path_.string() + ": cannot open input file: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw std::runtime_error(path_.string() + ": not a regular file");
  }
  try {
    if (kind == InputKind::npy) open_npy(static_cast<int64_t>(st.st_size));
    if (kind == InputKind::raw) open_raw(static_cast<int64_t>(st.st_size), raw_token_bytes);
    if (kind == InputKind::llmc) open_llmc();
  } catch (...) {
    ::close(fd_);
    throw;
  }
  ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
}

TokenFileReader::~TokenFileReader() {
  if (fd_ >= 0) ::close(fd_);
}

void TokenFileReader::open_npy(int64_t file_bytes) {
  const NpyLayout layout = read_npy_header(path_, fd_, file_bytes);
  count_ = layout.count;
  offset_ = layout.data_offset;
  width_ = layout.token_bytes;
  signed_ = layout.is_signed;
  description_ = layout.dtype + " .npy";
}

void TokenFileReader::open_raw(int64_t file_bytes, int raw_token_bytes) {
  if (raw_token_bytes != 2 && raw_token_bytes != 4)
    throw std::invalid_argument("prepare: raw token ids are 16 or 32 bits wide (--raw-bits 16 or 32)");
  width_ = raw_token_bytes;
  description_ = raw_token_bytes == 2 ? "raw uint16" : "raw uint32";
  if (file_bytes % width_ != 0) {
    throw std::runtime_error(path_.string() + ": " + std::to_string(file_bytes) + " bytes is not a whole number of " +
                             std::to_string(8 * width_) + "-bit ids: truncated, or not " + description_ + " ids");
  }
  count_ = file_bytes / width_;
}

// TokenShard::open checks the header and the size against its count (and maps nothing it would not read);
// the ids are then read here in chunks like any other token file.
void TokenFileReader::open_llmc() {
  const TokenShard shard = TokenShard::open(path_);
  count_ = shard.size();
  width_ = shard.token_bytes();
  offset_ = kShardHeaderBytes;
  description_ = width_ == 2 ? "llm.c uint16 shard" : "llm.c uint32 shard";
}

const std::vector<int64_t>& TokenFileReader::next_chunk(size_t max) {
  const auto n = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(max), count_ - next_));
  bytes_.resize(n * static_cast<size_t>(width_));
  size_t done = 0;
  const off_t at = offset_ + next_ * width_;
  while (done < bytes_.size()) {
    const ssize_t got = ::pread(fd_, bytes_.data() + done, bytes_.size() - done, at + static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw std::runtime_error(path_.string() + ": read failed: " + std::strerror(errno));
    if (got == 0) throw std::runtime_error(path_.string() + ": the file ended early (it shrank while being read)");
    done += static_cast<size_t>(got);
  }
  ids_.resize(n);
  // One branch per chunk, not per id.
  if (width_ == 2) {
    for (size_t i = 0; i < n; ++i) {
      uint16_t v;
      std::memcpy(&v, bytes_.data() + 2 * i, 2);
      ids_[i] = v;
    }
  } else if (signed_) {
    for (size_t i = 0; i < n; ++i) {
      int32_t v;
      std::memcpy(&v, bytes_.data() + 4 * i, 4);
      ids_[i] = v;
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      uint32_t v;
      std::memcpy(&v, bytes_.data() + 4 * i, 4);
      ids_[i] = v;
    }
  }
  next_ += static_cast<int64_t>(n);
  return ids_;
}

}  // namespace gradsweep::data
