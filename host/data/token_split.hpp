// A split (the training or the validation data) as one token stream over one or more shards, read in a
// fixed order (split_paths.hpp): the stream is the shards' tokens concatenated, so a batch may span the end
// of one shard and the start of the next. With that rule how a corpus is cut into shards never changes
// what is trained on: `prepare --shard-tokens` at any size gives the same batches as one big shard.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "data/token_shard.hpp"

namespace gradsweep::data {

class TokenSplit {
 public:
  // resolve_split_paths(entries), each shard opened and validated: throws std::runtime_error naming the
  // entry or the file (missing, a glob with no match, truncated, wrong magic).
  static TokenSplit open(const std::vector<std::filesystem::path>& entries);

  // Deliberately implicit: a single shard is a split of one (tests and tools pass TokenShard::open(path)).
  TokenSplit(TokenShard shard);  // NOLINT(google-explicit-constructor)
  explicit TokenSplit(std::vector<TokenShard> shards);

  // Tokens in all shards together: int64, as a split may exceed the 2^31-1 of one shard.
  int64_t size() const { return starts_.back(); }
  const std::vector<TokenShard>& shards() const { return shards_; }
  // For messages: the file, or the first and last file and how many.
  std::string describe() const;
  // The widest shard's bytes per token (2 or 4).
  int token_bytes() const;

  // Stream tokens [first, first + n) widened into `out`, across shard boundaries. Throws std::out_of_range
  // if the range leaves [0, size()): never a read past a shard's end.
  void copy_tokens(int64_t first, int64_t n, int64_t* out) const;

 private:
  std::vector<TokenShard> shards_;
  std::vector<int64_t> starts_;  // starts_[i]: stream index of shard i's first token; back() = size()
};

}  // namespace gradsweep::data
