#include "data/token_shard.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "util/atomic_file.hpp"

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
  if (header[0] != kShardMagic) {
    throw shard_error(path, "bad magic " + std::to_string(header[0]) + " (expected " + std::to_string(kShardMagic) +
                                "): not an llm.c token shard");
  }
  if (header[1] != kShardVersion) {
    throw shard_error(path, "unsupported version " + std::to_string(header[1]) + " (expected " +
                                std::to_string(kShardVersion) + ", uint16 tokens)");
  }
  const int64_t count = header[2];
  if (count < 0) throw shard_error(path, "negative token count " + std::to_string(count) + " in the header");
  const int64_t expected = kShardHeaderBytes + 2 * count;
  if (file_bytes != expected) {
    throw shard_error(
        path, "file is " + std::to_string(file_bytes) + " bytes but the header promises " + std::to_string(count) +
                  " tokens (1024 + 2*" + std::to_string(count) + " = " + std::to_string(expected) +
                  " bytes): " + (file_bytes < expected ? "truncated" : "trailing data") + " or corrupt shard");
  }
  shard.count_ = count;
  shard.tokens_ = reinterpret_cast<const uint16_t*>(static_cast<const char*>(map) + kShardHeaderBytes);
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
    tokens_ = other.tokens_;
    count_ = other.count_;
    other.map_ = nullptr;
    other.map_bytes_ = 0;
    other.tokens_ = nullptr;
    other.count_ = 0;
  }
  return *this;
}

TokenShard::~TokenShard() { release(); }

void TokenShard::release() {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
  map_ = nullptr;
}

void write_token_shard(const std::filesystem::path& path, const std::vector<int32_t>& tokens) {
  if (tokens.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    throw std::invalid_argument(path.string() + ": " + std::to_string(tokens.size()) +
                                " tokens do not fit one shard (the header count is int32): split the data");
  }
  std::string bytes(static_cast<size_t>(kShardHeaderBytes) + 2 * tokens.size(), '\0');
  int32_t header[kShardHeaderInts] = {};
  header[0] = kShardMagic;
  header[1] = kShardVersion;
  header[2] = static_cast<int32_t>(tokens.size());
  std::memcpy(bytes.data(), header, sizeof(header));
  char* out = bytes.data() + kShardHeaderBytes;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int32_t t = tokens[i];
    if (t < 0 || t >= kShardMaxVocab) {
      throw std::invalid_argument(path.string() + ": token " + std::to_string(t) + " at position " + std::to_string(i) +
                                  " does not fit the uint16 shard format (0..65535)");
    }
    const auto u = static_cast<uint16_t>(t);
    std::memcpy(out + 2 * i, &u, 2);
  }
  util::write_file_atomically(path, bytes);
}

std::vector<int32_t> read_token_shard(const std::filesystem::path& path) {
  const TokenShard shard = TokenShard::open(path);
  return std::vector<int32_t>(shard.tokens(), shard.tokens() + shard.size());
}

}  // namespace gradsweep::data
