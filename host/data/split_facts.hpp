// What a split holds that a model must accept: its largest token id and its width. Planning asks before any
// cell starts (host/experiment/plan/data_facts.hpp) and the trainer again before its first step, so an id the
// model has no embedding row for is refused with the file named instead of failing deep inside LibTorch.
//
// The largest id of a shard `gradsweep prepare` wrote is in the dataset.json next to it (in the shard's
// directory or the one above, for DIR/train/*.bin): read from there when the entry names the same file with
// the same token count and width, so a 100 GB corpus is not read to plan a sweep. Any other shard (llm.c's,
// a dataset.json that does not match) is read once, front to back.
#pragma once

#include <cstdint>
#include <filesystem>

#include "data/token_split.hpp"

namespace gradsweep::data {

struct SplitFacts {
  int64_t tokens = 0;
  int token_bytes = 2;             // the widest shard's
  int64_t max_token = 0;           // the largest id in any shard (0 when empty)
  std::filesystem::path max_file;  // the shard that holds it
  int64_t scanned_shards = 0;      // shards read for their largest id (not vouched for by dataset.json)
};

SplitFacts split_facts(const TokenSplit& split);

}  // namespace gradsweep::data
