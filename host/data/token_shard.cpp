#include "data/token_shard.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "data/token_shard_writer.hpp"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "token shards are little-endian and are read in place: add byte swapping for a big-endian target"
#endif

namespace gradsweep::data {
namespace {

std::runtime_error shard_error(const std::filesystem::path& path, const std::string& what) {
  return std::runtime_error(path.string() + ": " + what);
}

// Closes a descriptor on every path out of open().
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// The token width the header's magic and version announce: llm.c pairs each magic with one version.
int header_token_bytes(const std::filesystem::path& path, const int32_t* header) {
  if (header[0] != kShardMagic && header[0] != kShardMagic32) {
    throw shard_error(path, "bad magic " + std::to_string(header[0]) + " (expected " + std::to_string(kShardMagic) +
                                " for uint16 tokens or " + std::to_string(kShardMagic32) +
                                " for uint32): not an llm.c token shard");
  }
  const bool wide = header[0] == kShardMagic32;
  const int32_t expected = wide ? kShardVersion32 : kShardVersion;
  if (header[1] != expected) {
    throw shard_error(path, "unsupported version " + std::to_string(header[1]) + " (expected " +
                                std::to_string(expected) + " with magic " + std::to_string(header[0]) +
                                (wide ? ", uint32 tokens)" : ", uint16 tokens)"));
  }
  return wide ? 4 : 2;
}

}  // namespace

TokenShard TokenShard::open(const std::filesystem::path& path) {
  Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) {
    const int err = errno;
    throw shard_error(path, std::string("cannot open token shard: ") + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) throw shard_error(path, std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw shard_error(path, "not a regular file: not an llm.c token shard");
  const auto file_bytes = static_cast<int64_t>(st.st_size);
  if (file_bytes < kShardHeaderBytes) {
    throw shard_error(path, "only " + std::to_string(file_bytes) + " bytes, shorter than the " +
                                std::to_string(kShardHeaderBytes) +
                                "-byte header: truncated file or not an llm.c token shard");
  }

  TokenShard shard;
  shard.path_ = path;
  shard.map_bytes_ = static_cast<size_t>(file_bytes);
  void* map = ::mmap(nullptr, shard.map_bytes_, PROT_READ, MAP_PRIVATE, file.fd, 0);
  if (map == MAP_FAILED) throw shard_error(path, std::string("mmap failed: ") + std::strerror(errno));
  shard.map_ = map;  // from here the destructor unmaps if validation throws

  const auto* header = static_cast<const int32_t*>(map);
  const int width = header_token_bytes(path, header);
  const int64_t count = header[2];
  if (count < 0) throw shard_error(path, "negative token count " + std::to_string(count) + " in the header");
  // The size check is what keeps every read inside the mapping: a truncated shard is refused here.
  const int64_t expected = kShardHeaderBytes + width * count;
  if (file_bytes != expected) {
    const std::string w = std::to_string(width), n = std::to_string(count);
    throw shard_error(path, "file is " + std::to_string(file_bytes) + " bytes but the header promises " + n +
                                " tokens of " + w + " bytes (1024 + " + w + "*" + n + " = " + std::to_string(expected) +
                                " bytes): " + (file_bytes < expected ? "truncated" : "trailing data") +
                                " or corrupt shard");
  }
  shard.count_ = count;
  shard.token_bytes_ = width;
  shard.body_ = static_cast<const char*>(map) + kShardHeaderBytes;
  // Training reads the shard front to back: let the kernel read ahead.
  ::madvise(map, shard.map_bytes_, MADV_SEQUENTIAL);
  return shard;
}

TokenShard::TokenShard(TokenShard&& other) noexcept { *this = std::move(other); }

TokenShard& TokenShard::operator=(TokenShard&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    map_ = other.map_;
    map_bytes_ = other.map_bytes_;
    body_ = other.body_;
    count_ = other.count_;
    token_bytes_ = other.token_bytes_;
    other.map_ = nullptr;
    other.map_bytes_ = 0;
    other.body_ = nullptr;
    other.count_ = 0;
  }
  return *this;
}

TokenShard::~TokenShard() { release(); }

void TokenShard::release() {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
  map_ = nullptr;
}

const uint16_t* TokenShard::tokens() const {
  if (token_bytes_ != 2)
    throw std::logic_error(path_.string() + ": a 32-bit shard has no uint16 tokens (read it with token())");
  return static_cast<const uint16_t*>(body_);
}

void TokenShard::copy_tokens(int64_t first, int64_t n, int64_t* out) const {
  // One branch per call, not per token: the loops are what the batch loader spends its time in.
  if (token_bytes_ == 2) {
    const uint16_t* src = static_cast<const uint16_t*>(body_) + first;
    std::copy(src, src + n, out);
  } else {
    const uint32_t* src = static_cast<const uint32_t*>(body_) + first;
    std::copy(src, src + n, out);
  }
}

int64_t TokenShard::max_token() const {
  if (count_ == 0) return 0;
  if (token_bytes_ == 2) {
    const uint16_t* t = static_cast<const uint16_t*>(body_);
    return *std::max_element(t, t + count_);
  }
  const uint32_t* t = static_cast<const uint32_t*>(body_);
  return *std::max_element(t, t + count_);
}

void write_token_shard(const std::filesystem::path& path, const std::vector<int32_t>& tokens, int token_bytes) {
  if (tokens.size() > static_cast<size_t>(kShardMaxTokens)) {
    throw std::invalid_argument(path.string() + ": " + std::to_string(tokens.size()) +
                                " tokens do not fit one shard (the header count is int32): split the data");
  }
  TokenShardWriter writer(path, token_bytes);
  for (const int32_t t : tokens) writer.append(t);
  writer.finish();
}

std::vector<int32_t> read_token_shard(const std::filesystem::path& path) {
  const TokenShard shard = TokenShard::open(path);
  std::vector<int32_t> out(static_cast<size_t>(shard.size()));
  for (int64_t i = 0; i < shard.size(); ++i) out[static_cast<size_t>(i)] = static_cast<int32_t>(shard.token(i));
  return out;
}

}  // namespace gradsweep::data
