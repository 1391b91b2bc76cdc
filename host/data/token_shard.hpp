// llm.c token shards: the on-disk format of a tokenized data set (see docs/data.md).
//
//   header: 256 little-endian int32 (1024 bytes): [0] magic, [1] version, [2] token count, rest 0
//   body:   `count` little-endian tokens, uint16 or uint32 by the magic and version:
//             magic 20240520, version 1: uint16 (llm.c's GPT-2 shards)
//             magic 20240801, version 7: uint32 (llm.c's LLaMA-3 shards, dev/data/data_common.py)
//
// Using llm.c's formats unchanged means its shards (e.g. FineWeb, TinyStories from llm.c's dev/data scripts)
// train here as they are, and ours train there. The count is llm.c's int32, so one shard holds at most
// 2^31-1 tokens; a split larger than that is several shards (token_split.hpp), whose total is int64.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace gradsweep::data {

inline constexpr int32_t kShardMagic = 20240520;  // uint16 tokens
inline constexpr int32_t kShardVersion = 1;
inline constexpr int32_t kShardMagic32 = 20240801;  // uint32 tokens
inline constexpr int32_t kShardVersion32 = 7;
inline constexpr int64_t kShardHeaderInts = 256;
inline constexpr int64_t kShardHeaderBytes = kShardHeaderInts * 4;
// uint16 tokens: ids must be below this; a larger vocabulary needs 32-bit shards.
inline constexpr int64_t kShardMaxVocab = 65536;
inline constexpr int64_t kShardMaxVocab32 = int64_t{1} << 32;
// The header's count is an int32.
inline constexpr int64_t kShardMaxTokens = 2147483647;

// Bytes per token a vocabulary of `vocab_size` ids needs: 2 below 65,537 ids, else 4.
inline int token_bytes_for_vocab(int64_t vocab_size) { return vocab_size <= kShardMaxVocab ? 2 : 4; }

// A validated, read-only, memory-mapped shard. Mapping (rather than reading) lets every rank of a node share
// one copy of the tokens in the page cache, and opening a multi-GB shard costs nothing until it is read.
class TokenShard {
 public:
  // Throws std::runtime_error naming the file if it is missing, unreadable, or not a valid shard
  // (bad magic, a version that does not go with the magic, negative count, size != 1024 + width*count).
  static TokenShard open(const std::filesystem::path& path);

  TokenShard(TokenShard&& other) noexcept;
  TokenShard& operator=(TokenShard&& other) noexcept;
  TokenShard(const TokenShard&) = delete;
  TokenShard& operator=(const TokenShard&) = delete;
  ~TokenShard();

  const std::filesystem::path& path() const { return path_; }
  int64_t size() const { return count_; }
  // 2 (uint16 tokens) or 4 (uint32).
  int token_bytes() const { return token_bytes_; }
  // The tokens of a 16-bit shard, in file order (the format is little-endian and so are all our targets).
  // Throws std::logic_error on a 32-bit shard: use token() or copy_tokens(), which read either width.
  const uint16_t* tokens() const;
  // Token i of either width, as int64 (every uint32 id fits, and comparisons need no unsigned care).
  int64_t token(int64_t i) const {
    return token_bytes_ == 2 ? static_cast<const uint16_t*>(body_)[i] : static_cast<const uint32_t*>(body_)[i];
  }
  int64_t operator[](int64_t i) const { return token(i); }
  // Tokens [first, first + n) widened into `out`; the caller keeps the range inside [0, size()).
  void copy_tokens(int64_t first, int64_t n, int64_t* out) const;
  // The largest id in the shard (0 when empty): one pass over it.
  int64_t max_token() const;

 private:
  TokenShard() = default;
  void release();

  std::filesystem::path path_;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  const void* body_ = nullptr;
  int64_t count_ = 0;
  int token_bytes_ = 2;
};

// Writes a shard atomically (temporary file, fsync, rename) with `token_bytes` 2 (uint16, the default) or 4
// (uint32). Throws std::invalid_argument if a token is negative or does not fit the width, or if there are
// more than 2^31-1 tokens; nothing is written then.
void write_token_shard(const std::filesystem::path& path, const std::vector<int32_t>& tokens, int token_bytes = 2);

// Convenience for tests and tools: the shard's tokens as a vector (ids above 2^31-1 do not fit: use
// TokenShard).
std::vector<int32_t> read_token_shard(const std::filesystem::path& path);

}  // namespace gradsweep::data
