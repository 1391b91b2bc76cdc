// Batch slicing for data parallelism: the global batch of a step is the same whatever the number of ranks.
#include <gtest/gtest.h>

#include <stdexcept>

#include "data/batch_loader.hpp"
#include "data/tokenizer.hpp"
#include "data_test_support.hpp"

namespace gradsweep::data {
namespace {

using testing::TempDir;

// Token i = i mod 65536: any slice shows exactly where in the shard it came from.
std::filesystem::path positional_shard(const TempDir& dir, int64_t count) {
  std::vector<int32_t> tokens(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) tokens[i] = static_cast<int32_t>(i % 65536);
  const auto path = dir / ("positional-" + std::to_string(count) + ".bin");
  write_token_shard(path, tokens);
  return path;
}

// Real text: the fortunes quotations about computers, byte-encoded.
std::filesystem::path fortunes_shard(const TempDir& dir) {
  const auto path = dir / "computers.bin";
  write_token_shard(path, make_byte_tokenizer()->encode(testing::read_file(testing::fortune_file("computers"))));
  return path;
}

BatchLoader loader(const std::filesystem::path& shard, int64_t G, int64_t T, int64_t M, int64_t r = 0, int64_t W = 1) {
  return BatchLoader(TokenShard::open(shard), BatchLoaderOptions{G, T, M, r, W});
}

// Step `step`'s data as W ranks see it, concatenated rank by rank, micro-batch by micro-batch: (G, T).
std::pair<torch::Tensor, torch::Tensor> global_batch(const std::filesystem::path& shard, int64_t step, int64_t G,
                                                     int64_t T, int64_t M, int64_t W) {
  std::vector<torch::Tensor> inputs, targets;
  for (int64_t r = 0; r < W; ++r) {
    const BatchLoader l = loader(shard, G, T, M, r, W);
    for (int64_t m = 0; m < l.micro_batches_per_step(); ++m) {
      Batch b = l.batch(step, m);
      inputs.push_back(b.inputs);
      targets.push_back(b.targets);
    }
  }
  return {torch::cat(inputs), torch::cat(targets)};
}

TEST(BatchLoader, GlobalBatchIsTheSameForOneTwoAndFourRanks) {
  TempDir dir;
  const auto shard = fortunes_shard(dir);
  const int64_t G = 16, T = 64, M = 2;
  const int64_t batches = loader(shard, G, T, M).num_batches();
  ASSERT_GT(batches, 3);
  for (const int64_t step : {int64_t{0}, int64_t{1}, batches - 1, batches, batches + 2}) {
    const auto [in1, tg1] = global_batch(shard, step, G, T, M, 1);
    ASSERT_EQ(in1.sizes(), (std::vector<int64_t>{G, T}));
    for (const int64_t W : {2, 4}) {
      const auto [inW, tgW] = global_batch(shard, step, G, T, M, W);
      EXPECT_TRUE(torch::equal(in1, inW)) << "step " << step << ", " << W << " ranks";
      EXPECT_TRUE(torch::equal(tg1, tgW)) << "step " << step << ", " << W << " ranks";
    }
  }
}

TEST(BatchLoader, GlobalBatchIsConsecutiveSequencesAtStepTimesGT) {
  TempDir dir;
  const int64_t G = 8, T = 16, M = 2;
  const auto shard = positional_shard(dir, 3 * G * T + 1);  // exactly three global batches
  const auto [inputs, targets] = global_batch(shard, 1, G, T, M, 2);
  const auto expected = torch::arange(G * T, 2 * G * T, torch::kInt64).reshape({G, T});
  EXPECT_TRUE(torch::equal(inputs, expected));
  EXPECT_TRUE(torch::equal(targets, expected + 1));
}

TEST(BatchLoader, RankOwnsItsContiguousShareInMicroBatches) {
  TempDir dir;
  const int64_t G = 8, T = 4, M = 1, W = 4;
  const auto shard = positional_shard(dir, 5 * G * T);
  const BatchLoader rank2 = loader(shard, G, T, M, 2, W);
  EXPECT_EQ(rank2.micro_batches_per_step(), 2);
  // Step 3 starts at 3*G*T = 96; rank 2 owns sequences 4 and 5: tokens 96+16.. and 96+20..
  EXPECT_EQ(rank2.batch(3, 0).inputs[0][0].item<int64_t>(), 96 + 4 * T);
  EXPECT_EQ(rank2.batch(3, 1).inputs[0][0].item<int64_t>(), 96 + 5 * T);
}

TEST(BatchLoader, TargetsAreInputsShiftedByOneToken) {
  TempDir dir;
  const auto path = fortunes_shard(dir);
  const BatchLoader l = loader(path, 8, 32, 4, 1, 2);
  const TokenShard shard = TokenShard::open(path);
  const Batch b = l.batch(5, 0);
  ASSERT_EQ(b.inputs.sizes(), (std::vector<int64_t>{4, 32}));
  EXPECT_EQ(b.inputs.scalar_type(), torch::kInt64);
  EXPECT_EQ(b.targets.scalar_type(), torch::kInt64);
  using torch::indexing::Slice;
  EXPECT_TRUE(torch::equal(b.targets.index({Slice(), Slice(0, -1)}),
                           b.inputs.index({Slice(), Slice(1, torch::indexing::None)})));
  // The last target of each row is the token after the row in the shard: step 5, rank 1 of 2, sequences 4..7.
  for (int64_t row = 0; row < 4; ++row) {
    const int64_t start = 5 * 8 * 32 + (4 + row) * 32;
    EXPECT_EQ(b.inputs[row][0].item<int64_t>(), shard[start]);
    EXPECT_EQ(b.targets[row][31].item<int64_t>(), shard[start + 32]);
  }
}

TEST(BatchLoader, StepWrapsAroundAfterTheLastGlobalBatch) {
  TempDir dir;
  const int64_t G = 4, T = 8, M = 2;
  const auto shard = positional_shard(dir, 3 * G * T + 5);
  const BatchLoader l = loader(shard, G, T, M);
  EXPECT_EQ(l.num_batches(), 3);
  for (int64_t m = 0; m < l.micro_batches_per_step(); ++m) {
    EXPECT_TRUE(torch::equal(l.batch(3, m).inputs, l.batch(0, m).inputs));
    EXPECT_TRUE(torch::equal(l.batch(7, m).targets, l.batch(1, m).targets));
  }
  EXPECT_FALSE(torch::equal(l.batch(1, 0).inputs, l.batch(0, 0).inputs));
}

TEST(BatchLoader, AFreshLoaderResumesAtAnyStep) {
  TempDir dir;
  const auto shard = fortunes_shard(dir);
  const BatchLoader before = loader(shard, 8, 32, 2, 1, 2);
  for (int64_t s = 0; s < 5; ++s) before.batch(s, 0);       // "train" a few steps
  const BatchLoader after = loader(shard, 8, 32, 2, 1, 2);  // restarted process
  EXPECT_TRUE(torch::equal(before.batch(5, 1).inputs, after.batch(5, 1).inputs));
}

TEST(BatchLoader, GlobalBatchNotDivisibleByMicroBatchTimesRanksIsAnError) {
  TempDir dir;
  const auto shard = positional_shard(dir, 10000);
  try {
    loader(shard, 12, 8, 2, 0, 4);
    ADD_FAILURE() << "G=12, M=2, W=4 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("global batch size 12 is not a multiple of"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("2 x 4 = 8"), std::string::npos) << e.what();
  }
  EXPECT_THROW(loader(shard, 8, 8, 2, 4, 4), std::invalid_argument);  // rank out of range
  EXPECT_THROW(loader(shard, 8, 0, 2), std::invalid_argument);
  EXPECT_NO_THROW(loader(shard, 16, 8, 2, 0, 4));
  EXPECT_EQ(loader(shard, 16, 8, 2, 0, 4).micro_batches_per_step(), 2);
}

TEST(BatchLoader, ShardTooSmallForOneGlobalBatchNamesFileNeededAndPresent) {
  TempDir dir;
  const int64_t G = 8, T = 16, M = 2;
  const auto shard = positional_shard(dir, G * T);  // one token short
  const BatchLoader l = loader(shard, G, T, M);
  EXPECT_EQ(l.num_batches(), 0);
  try {
    l.batch(0, 0);
    ADD_FAILURE() << "batch() on a too small shard did not throw";
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(shard.string()), std::string::npos) << message;
    EXPECT_NE(message.find("needs 129 tokens, has 128"), std::string::npos) << message;
  }
  // Not even one (M, T) batch: refused when the loader is made.
  EXPECT_THROW(loader(positional_shard(dir, M * T), G, T, M), std::runtime_error);
}

TEST(BatchLoader, EvalBatchesAreFromTheStartIdenticalOnAllRanksAndWrap) {
  TempDir dir;
  const int64_t G = 64, T = 8, M = 2;
  const auto shard = positional_shard(dir, 5 * M * T + 3);  // smaller than a global batch: eval still works
  const BatchLoader r0 = loader(shard, G, T, M, 0, 4);
  const BatchLoader r3 = loader(shard, G, T, M, 3, 4);
  EXPECT_EQ(r0.num_eval_batches(), 5);
  for (int64_t i = 0; i < 12; ++i) {
    const Batch a = r0.eval_batch(i), b = r3.eval_batch(i);
    EXPECT_TRUE(torch::equal(a.inputs, b.inputs));
    const auto expected = torch::arange((i % 5) * M * T, (i % 5 + 1) * M * T, torch::kInt64).reshape({M, T});
    EXPECT_TRUE(torch::equal(a.inputs, expected)) << i;
    EXPECT_TRUE(torch::equal(a.targets, expected + 1)) << i;
  }
}

}  // namespace
}  // namespace gradsweep::data
