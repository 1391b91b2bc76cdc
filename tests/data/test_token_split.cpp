// Splits of many shards: which files a split names (file, directory, glob, list) and in what order, the
// refusals that name the file, and the stream rule: batches over several shards are exactly the batches of
// the same tokens in one shard, for any number of ranks.
#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>

#include "data/batch_loader.hpp"
#include "data/split_paths.hpp"
#include "data/token_shard.hpp"
#include "data/token_split.hpp"
#include "data_test_support.hpp"

namespace gradsweep::data {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::vector<int32_t> iota_tokens(int32_t first, int32_t n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

// Runs `f` expecting std::runtime_error whose message contains every one of `parts`.
template <class F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    for (const auto& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(SplitPaths, DirectoryGlobAndListAreReadInNameAndListOrder) {
  TempDir dir;
  // Written out of order, with files a directory split must skip.
  for (const char* name : {"b_001.bin", "b_000.bin", "b_010.bin"}) write_token_shard(dir / "d" / name, {1});
  testing::write_file(dir / "d" / "notes.txt", "not a shard");
  write_token_shard(dir / "d" / ".hidden.bin", {1});
  const std::vector<fs::path> ordered{dir / "d" / "b_000.bin", dir / "d" / "b_001.bin", dir / "d" / "b_010.bin"};
  EXPECT_EQ(resolve_split_paths({dir / "d"}), ordered);
  EXPECT_EQ(resolve_split_paths({dir / "d" / "b_0*.bin"}), ordered);
  // A list keeps its own order, even against name order.
  EXPECT_EQ(resolve_split_paths({dir / "d" / "b_010.bin", dir / "d" / "b_00[01].bin"}),
            (std::vector<fs::path>{ordered[2], ordered[0], ordered[1]}));
}

TEST(SplitPaths, RefusalsNameTheEntry) {
  TempDir dir;
  fs::create_directories(dir / "empty");
  expect_error([&] { resolve_split_paths({dir / "nope.bin"}); }, {"no such file: " + (dir / "nope.bin").string()});
  expect_error([&] { resolve_split_paths({dir / "train_*.bin"}); },
               {(dir / "train_*.bin").string(), "matches no file"});
  expect_error([&] { resolve_split_paths({dir / "empty"}); }, {(dir / "empty").string(), "no *.bin"});
  write_token_shard(dir / "a.bin", {1});
  expect_error([&] { resolve_split_paths({dir / "a.bin", dir / "*.bin"}); }, {"a.bin", "named twice"});
  expect_error([&] { resolve_split_paths({}); }, {"empty list"});
}

TEST(TokenSplit, ACorruptShardAmongManyIsRefusedWithItsName) {
  TempDir dir;
  write_token_shard(dir / "s" / "a_0.bin", {1, 2});
  write_token_shard(dir / "s" / "a_1.bin", {3, 4});
  std::string truncated = testing::read_file(dir / "s" / "a_1.bin");
  truncated.pop_back();
  testing::write_file(dir / "s" / "a_1.bin", truncated);
  expect_error([&] { TokenSplit::open({dir / "s"}); }, {(dir / "s" / "a_1.bin").string(), "truncated"});
  testing::write_file(dir / "s" / "a_1.bin", std::string(2048, 'x'));
  expect_error([&] { TokenSplit::open({dir / "s"}); }, {(dir / "s" / "a_1.bin").string(), "bad magic"});
}

TEST(TokenSplit, CopiesAcrossShardBoundariesAndNeverPastTheEnd) {
  TempDir dir;
  // 5 + 0 + 3 + 4 tokens; the empty shard and a 32-bit one in the middle are part of the stream too.
  write_token_shard(dir / "0.bin", iota_tokens(0, 5));
  write_token_shard(dir / "1.bin", {});
  write_token_shard(dir / "2.bin", iota_tokens(5, 3), 4);
  write_token_shard(dir / "3.bin", iota_tokens(8, 4));
  const TokenSplit split = TokenSplit::open({dir / "*.bin"});
  ASSERT_EQ(split.size(), 12);
  EXPECT_EQ(split.token_bytes(), 4);
  std::vector<int64_t> out(12);
  split.copy_tokens(0, 12, out.data());
  EXPECT_EQ(out, std::vector<int64_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  std::vector<int64_t> middle(6);
  split.copy_tokens(4, 6, middle.data());
  EXPECT_EQ(middle, std::vector<int64_t>({4, 5, 6, 7, 8, 9}));
  EXPECT_THROW(split.copy_tokens(8, 5, out.data()), std::out_of_range);
  EXPECT_THROW(split.copy_tokens(-1, 2, out.data()), std::out_of_range);
}

// The stream rule: G*T+1 tokens across shard ends give the same batches as one shard of those tokens,
// for every step (wrapping) and every rank count.
TEST(TokenSplit, BatchesOverShardsEqualBatchesOverOneShard) {
  TempDir dir;
  const std::vector<int32_t> all = iota_tokens(0, 1000);
  write_token_shard(dir / "one.bin", all);
  for (int s = 0; s < 7; ++s) {  // uneven pieces: 143 tokens each, the last 142
    const auto first = all.begin() + s * 143;
    const auto last = s == 6 ? all.end() : first + 143;
    write_token_shard(dir / "many" / ("p_" + std::to_string(s) + ".bin"), std::vector<int32_t>(first, last));
  }
  for (const int64_t W : {1, 2, 4}) {
    for (int64_t r = 0; r < W; ++r) {
      const BatchLoaderOptions o{8, 12, 2, r, W};
      const BatchLoader one(TokenShard::open(dir / "one.bin"), o);
      const BatchLoader many(TokenSplit::open({dir / "many"}), o);
      ASSERT_EQ(one.num_batches(), many.num_batches());
      for (int64_t step = 0; step < one.num_batches() + 2; ++step) {
        for (int64_t m = 0; m < one.micro_batches_per_step(); ++m) {
          EXPECT_TRUE(one.batch(step, m).inputs.equal(many.batch(step, m).inputs)) << step << " " << m;
          EXPECT_TRUE(one.batch(step, m).targets.equal(many.batch(step, m).targets)) << step << " " << m;
        }
      }
      EXPECT_TRUE(one.eval_batch(5).targets.equal(many.eval_batch(5).targets));
    }
  }
}

TEST(TokenSplit, TooSmallSplitNamesItsShards) {
  TempDir dir;
  write_token_shard(dir / "a.bin", {1, 2, 3});
  write_token_shard(dir / "b.bin", {4, 5});
  try {
    BatchLoader(TokenSplit::open({dir / "a.bin", dir / "b.bin"}), BatchLoaderOptions{4, 4, 4, 0, 1});
    ADD_FAILURE() << "a 5-token split served a 16-token batch";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("a.bin ... "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(2 shards)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gradsweep::data
