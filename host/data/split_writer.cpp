#include "data/split_writer.hpp"

#include <unistd.h>

#include <cstdio>
#include <stdexcept>

#include "data/token_shard.hpp"
#include "util/atomic_file.hpp"

namespace gradsweep::data {
namespace fs = std::filesystem;
namespace {

// Whether `dir` is an earlier prepare's shard directory of split `name`: only name_NNNNNN.bin files in it. A
// directory holding anything else is the user's and is left alone.
bool holds_only_our_shards(const fs::path& dir, const std::string& name) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string file = e.path().filename().string();
    if (file.rfind(name + "_", 0) != 0 || e.path().extension() != ".bin") return false;
  }
  return !ec;
}

}  // namespace

SplitWriter::SplitWriter(fs::path out_dir, std::string name, int token_bytes, int64_t shard_tokens)
    : out_dir_(std::move(out_dir)), name_(std::move(name)), token_bytes_(token_bytes), shard_tokens_(shard_tokens) {
  if (shard_tokens_ < 0 || shard_tokens_ > kShardMaxTokens)
    throw std::invalid_argument("prepare: tokens per shard " + std::to_string(shard_tokens_) + " is outside [1, " +
                                std::to_string(kShardMaxTokens) + "] (0: one file per split)");
  if (shard_tokens_ > 0) {
    staging_ = out_dir_ / ("." + name_ + ".staging." + std::to_string(::getpid()));
    fs::remove_all(staging_);
  }
  start_shard();
}

SplitWriter::~SplitWriter() {
  current_.reset();  // removes an unfinished shard's temporary file
  std::error_code ignored;
  if (!staging_.empty()) fs::remove_all(staging_, ignored);
}

std::string SplitWriter::entry() const { return shard_tokens_ > 0 ? name_ : name_ + ".bin"; }

void SplitWriter::start_shard() {
  if (shard_tokens_ == 0) {
    current_ = std::make_unique<TokenShardWriter>(out_dir_ / (name_ + ".bin"), token_bytes_);
    return;
  }
  char index[16];
  std::snprintf(index, sizeof index, "%06zu", records_.size());
  current_ = std::make_unique<TokenShardWriter>(staging_ / (name_ + "_" + index + ".bin"), token_bytes_);
}

void SplitWriter::end_shard() {
  current_->finish();
  const std::string file = shard_tokens_ > 0 ? name_ + "/" + current_->path().filename().string() : entry();
  records_.push_back({file, current_->size(), current_->max_token()});
  current_.reset();
}

void SplitWriter::append(int64_t token) {
  if (shard_tokens_ > 0 && current_->size() == shard_tokens_) {
    end_shard();
    start_shard();
  } else if (shard_tokens_ == 0 && current_->size() == kShardMaxTokens) {
    throw std::runtime_error("prepare: the " + name_ + " split has more than " + std::to_string(kShardMaxTokens) +
                             " tokens, more than one shard holds (the llm.c header's count is int32): "
                             "write several with --shard-tokens N");
  }
  current_->append(token);
  ++tokens_;
}

std::vector<ShardRecord> SplitWriter::finish() {
  end_shard();
  std::error_code ignored;
  if (shard_tokens_ > 0) {
    util::replace_directory(staging_, out_dir_ / name_);
    staging_.clear();
    fs::remove(out_dir_ / (name_ + ".bin"), ignored);
  } else if (holds_only_our_shards(out_dir_ / name_, name_)) {
    fs::remove_all(out_dir_ / name_, ignored);
  }
  return records_;
}

}  // namespace gradsweep::data
