#include "data/token_split.hpp"

#include <algorithm>
#include <stdexcept>

#include "data/split_paths.hpp"

namespace gradsweep::data {

TokenSplit TokenSplit::open(const std::vector<std::filesystem::path>& entries) {
  std::vector<TokenShard> shards;
  for (const auto& file : resolve_split_paths(entries)) shards.push_back(TokenShard::open(file));
  return TokenSplit(std::move(shards));
}

TokenSplit::TokenSplit(TokenShard shard) {
  shards_.push_back(std::move(shard));
  starts_ = {0, shards_[0].size()};
}

TokenSplit::TokenSplit(std::vector<TokenShard> shards) : shards_(std::move(shards)) {
  if (shards_.empty()) throw std::invalid_argument("a token split needs at least one shard");
  starts_.push_back(0);
  for (const TokenShard& s : shards_) starts_.push_back(starts_.back() + s.size());
}

std::string TokenSplit::describe() const {
  if (shards_.size() == 1) return shards_[0].path().string();
  return shards_.front().path().string() + " ... " + shards_.back().path().string() + " (" +
         std::to_string(shards_.size()) + " shards)";
}

int TokenSplit::token_bytes() const {
  int widest = 2;
  for (const TokenShard& s : shards_) widest = std::max(widest, s.token_bytes());
  return widest;
}

void TokenSplit::copy_tokens(int64_t first, int64_t n, int64_t* out) const {
  if (first < 0 || n < 0 || first > size() - n)
    throw std::out_of_range(describe() + ": tokens [" + std::to_string(first) + ", " + std::to_string(first + n) +
                            ") are outside the split's " + std::to_string(size()));
  // The shard holding `first`: the last whose start is <= first (empty shards are skipped by the loop).
  auto shard = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), first) - starts_.begin() - 1);
  while (n > 0) {
    const int64_t offset = first - starts_[shard];
    const int64_t take = std::min(n, shards_[shard].size() - offset);
    if (take > 0) shards_[shard].copy_tokens(offset, take, out);
    out += take;
    first += take;
    n -= take;
    ++shard;
  }
}

}  // namespace gradsweep::data
