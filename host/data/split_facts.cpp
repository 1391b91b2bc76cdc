#include "data/split_facts.hpp"

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

namespace gradsweep::data {
namespace fs = std::filesystem;
namespace {

// dataset.json's "shards" records by canonical file path: {tokens, token_bytes, max_id}.
struct Recorded {
  int64_t tokens = 0;
  int token_bytes = 2;
  int64_t max_id = 0;
};
using Records = std::map<fs::path, Recorded>;

// The records of DIR/dataset.json; none when it is missing or not prepare's (a damaged one is not trusted).
Records read_records(const fs::path& dir) {
  Records records;
  std::ifstream in(dir / "dataset.json");
  if (!in) return records;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("shards") || !j["shards"].is_object()) return records;
  const int width = j.contains("format") ? j["format"].value("token_bytes", 2) : 2;
  for (const auto& [split, list] : j["shards"].items()) {
    if (!list.is_array()) continue;
    for (const auto& s : list) {
      if (!s.is_object() || !s.contains("file") || !s.contains("tokens") || !s.contains("max_id")) continue;
      if (!s["file"].is_string() || !s["tokens"].is_number_integer() || !s["max_id"].is_number_integer()) continue;
      records[fs::weakly_canonical(dir / s["file"].get<std::string>())] = {s["tokens"].get<int64_t>(), width,
                                                                           s["max_id"].get<int64_t>()};
    }
  }
  return records;
}

// The largest id of `shard` as dataset.json records it, when a record matches the shard as it is.
std::optional<int64_t> recorded_max(const TokenShard& shard, std::map<fs::path, Records>& by_dir) {
  const fs::path file = fs::weakly_canonical(shard.path());
  for (const fs::path& dir : {file.parent_path(), file.parent_path().parent_path()}) {
    auto it = by_dir.find(dir);
    if (it == by_dir.end()) it = by_dir.emplace(dir, read_records(dir)).first;
    const auto r = it->second.find(file);
    if (r != it->second.end() && r->second.tokens == shard.size() && r->second.token_bytes == shard.token_bytes())
      return r->second.max_id;
  }
  return std::nullopt;
}

}  // namespace

SplitFacts split_facts(const TokenSplit& split) {
  SplitFacts facts;
  facts.tokens = split.size();
  facts.token_bytes = split.token_bytes();
  std::map<fs::path, Records> by_dir;
  for (const TokenShard& shard : split.shards()) {
    std::optional<int64_t> max = recorded_max(shard, by_dir);
    if (!max) {
      max = shard.max_token();
      ++facts.scanned_shards;
    }
    if (facts.max_file.empty() || *max > facts.max_token) {
      facts.max_token = *max;
      facts.max_file = shard.path();
    }
  }
  return facts;
}

}  // namespace gradsweep::data
