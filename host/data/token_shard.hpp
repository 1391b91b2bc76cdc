// llm.c token shards: the on-disk format of a tokenized data set (see docs/data.md).
//
//   header: 256 little-endian int32 (1024 bytes): [0] magic 20240520, [1] version 1, [2] token count, rest 0
//   body:   `count` little-endian uint16 tokens
//
// Using llm.c's format unchanged means its shards (e.g. FineWeb, TinyStories from llm.c's dev/data scripts)
// train here as they are, and ours train there.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace gradsweep::data {

inline constexpr int32_t kShardMagic = 20240520;
inline constexpr int32_t kShardVersion = 1;
inline constexpr int64_t kShardHeaderInts = 256;
inline constexpr int64_t kShardHeaderBytes = kShardHeaderInts * 4;
// uint16 tokens: ids must be below this.
inline constexpr int64_t kShardMaxVocab = 65536;

// A validated, read-only, memory-mapped shard. Mapping (rather than reading) lets every rank of a node share
// one copy of the tokens in the page cache, and opening a multi-GB shard costs nothing until it is read.
class TokenShard {
 public:
  // Throws std::runtime_error naming the file if it is missing, unreadable, or not a valid shard
  // (bad magic, bad version, negative count, size != 1024 + 2*count).
  static TokenShard open(const std::filesystem::path& path);

  TokenShard(TokenShard&& other) noexcept;
  TokenShard& operator=(TokenShard&& other) noexcept;
  TokenShard(const TokenShard&) = delete;
  TokenShard& operator=(const TokenShard&) = delete;
  ~TokenShard();

  const std::filesystem::path& path() const { return path_; }
  int64_t size() const { return count_; }
  // The `size()` tokens, in file order (the format is little-endian and so are all our targets).
  const uint16_t* tokens() const { return tokens_; }
  uint16_t operator[](int64_t i) const { return tokens_[i]; }

 private:
  TokenShard() = default;
  void release();

  std::filesystem::path path_;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  const uint16_t* tokens_ = nullptr;
  int64_t count_ = 0;
};

// Writes a shard atomically (temporary file, fsync, rename). Throws std::invalid_argument if a token is
// negative or >= 65536 (the format stores uint16), or if there are more than 2^31-1 tokens.
void write_token_shard(const std::filesystem::path& path, const std::vector<int32_t>& tokens);

// Convenience for tests and tools: the shard's tokens as a vector.
std::vector<int32_t> read_token_shard(const std::filesystem::path& path);

}  // namespace gradsweep::data
