// One split of a prepared data set written as it is encoded: a single shard (OUT/train.bin), or with
// shard_tokens > 0 shards of that many tokens (OUT/train/train_000000.bin, ...; the last may be shorter).
//
// Shards go to a staging directory first and replace OUT/train/ only when the split is complete, so a
// directory of shards is never a mixture of this run's and an earlier one's (a directory split reads every
// *.bin in it). The records (file, tokens, largest id) go into dataset.json, where planning reads them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "data/token_shard_writer.hpp"

namespace gradsweep::data {

struct ShardRecord {
  std::string file;  // relative to the data set directory
  int64_t tokens = 0;
  int64_t max_id = 0;
};

class SplitWriter {
 public:
  // `name`: "train" or "val". `token_bytes`: 2 or 4. `shard_tokens`: 0 for one file, else tokens per shard.
  SplitWriter(std::filesystem::path out_dir, std::string name, int token_bytes, int64_t shard_tokens);
  SplitWriter(const SplitWriter&) = delete;
  SplitWriter& operator=(const SplitWriter&) = delete;
  ~SplitWriter();

  // Throws std::runtime_error when one file would exceed 2^31-1 tokens (the header's int32): use shards.
  void append(int64_t token);
  int64_t size() const { return tokens_; }
  // Finishes the last shard and moves the split into place; removes the other layout's leftovers (train.bin
  // when writing train/, and the reverse). Returns what dataset.json records, in reading order.
  std::vector<ShardRecord> finish();
  // What dataset.json's "files" names for data.train / data.val: "train.bin" or "train".
  std::string entry() const;

 private:
  void start_shard();
  void end_shard();

  std::filesystem::path out_dir_;
  std::string name_;
  int token_bytes_;
  int64_t shard_tokens_;
  std::filesystem::path staging_;
  std::unique_ptr<TokenShardWriter> current_;
  std::vector<ShardRecord> records_;
  int64_t tokens_ = 0;
};

}  // namespace gradsweep::data
