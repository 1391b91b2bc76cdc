// The SDK's keyed dropout (sample_dropout.hpp): a sample's mask depends on (seed, step, sample, site)
// only, not on the batch it sits in; different keys give different masks; the statistics are dropout's.
#include <gradsweep/sdk/sample_dropout.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace gradsweep::test::models {
namespace {

sdk::Batch keyed_batch(const std::vector<std::int64_t>& ids, std::int64_t step, std::uint64_t seed) {
  sdk::Batch batch;
  batch.sample_ids = torch::tensor(ids, torch::kLong);
  batch.step = step;
  batch.seed = seed;
  return batch;
}

// Each sample's row of the masks of a (B, 3, 16, 16) tensor: attention-shaped, 768 elements per sample.
torch::Tensor masks(const sdk::Batch& batch, double p, std::uint64_t site) {
  const torch::Tensor x = torch::ones({batch.sample_ids.size(0), 3, 16, 16});
  return sdk::SampleDropout(batch).keep_mask(x, p, site);
}

TEST(SampleDropout, SameSampleGetsTheSameMaskInAnyBatch) {
  const torch::Tensor whole = masks(keyed_batch({0, 1, 2, 3, 4, 5}, 9, 7), 0.1, 3);
  const torch::Tensor part = masks(keyed_batch({4, 5}, 9, 7), 0.1, 3);  // another rank's micro-batch
  const torch::Tensor single = masks(keyed_batch({2}, 9, 7), 0.1, 3);   // micro_batch 1
  EXPECT_TRUE(torch::equal(whole.slice(0, 4, 6), part));
  EXPECT_TRUE(torch::equal(whole[2], single[0]));
  // The values, too: the same input gives the same output.
  const torch::Tensor x = torch::randn({6, 5, 7});
  sdk::SampleDropout all(keyed_batch({0, 1, 2, 3, 4, 5}, 9, 7)), two(keyed_batch({1, 2}, 9, 7));
  EXPECT_TRUE(torch::equal(all(x, 0.3, 1, true).slice(0, 1, 3), two(x.slice(0, 1, 3), 0.3, 1, true)));
}

TEST(SampleDropout, SamplesStepsSitesAndSeedsGetDifferentMasks) {
  const torch::Tensor base = masks(keyed_batch({0, 1}, 9, 7), 0.5, 3);
  EXPECT_FALSE(torch::equal(base[0], base[1]));                                 // sample
  EXPECT_FALSE(torch::equal(base, masks(keyed_batch({0, 1}, 10, 7), 0.5, 3)));  // step
  EXPECT_FALSE(torch::equal(base, masks(keyed_batch({0, 1}, 9, 7), 0.5, 4)));   // site
  EXPECT_FALSE(torch::equal(base, masks(keyed_batch({0, 1}, 9, 8), 0.5, 3)));   // seed
  // Not merely different: about half the bits of two independent p=0.5 masks disagree.
  const double disagree = base.ne(masks(keyed_batch({0, 1}, 10, 7), 0.5, 3)).to(torch::kDouble).mean().item<double>();
  EXPECT_NEAR(disagree, 0.5, 0.03);
}

TEST(SampleDropout, KeepsAboutOneMinusPAndScalesTheKept) {
  for (const double p : {0.1, 0.5, 0.9}) {
    const sdk::Batch batch = keyed_batch({0, 1, 2, 3, 4, 5, 6, 7}, 3, 11);
    const torch::Tensor x = torch::rand({8, 64, 64}) + 0.5;  // no zeros of its own
    const torch::Tensor y = sdk::SampleDropout(batch)(x, p, 2, true);
    const torch::Tensor kept = y.ne(0);
    // 32768 draws: the standard error of the kept fraction is at most 0.003.
    EXPECT_NEAR(kept.to(torch::kDouble).mean().item<double>(), 1.0 - p, 0.015) << "p " << p;
    EXPECT_TRUE(torch::allclose(y.masked_select(kept), x.masked_select(kept) / (1.0 - p))) << "p " << p;
    // Every element position is kept as often as any other: no stripes along the element index.
    const torch::Tensor by_position = kept.to(torch::kDouble).mean(0).reshape({64, 64}).mean(1);
    EXPECT_LT((by_position - (1.0 - p)).abs().max().item<double>(), 0.1) << "p " << p;
  }
}

TEST(SampleDropout, EvaluationZeroPAndUnkeyedBatches) {
  const sdk::Batch batch = keyed_batch({0, 1}, 0, 1);
  const torch::Tensor x = torch::randn({2, 10});
  EXPECT_TRUE(torch::equal(sdk::SampleDropout(batch)(x, 0.5, 0, /*training=*/false), x));
  EXPECT_TRUE(torch::equal(sdk::SampleDropout(batch)(x, 0.0, 0, true), x));
  // Without keys it is torch::dropout, drawing from the global generator.
  torch::manual_seed(5);
  const torch::Tensor a = sdk::SampleDropout()(x, 0.5, 0, true);
  torch::manual_seed(5);
  EXPECT_TRUE(torch::equal(a, torch::dropout(x, 0.5, true)));
  EXPECT_FALSE(sdk::SampleDropout(sdk::Batch{}).keyed());
}

TEST(SampleDropout, GradientFlowsThroughTheKeptOnly) {
  const sdk::Batch batch = keyed_batch({4, 9, 2}, 1, 1);
  const torch::Tensor x = torch::randn({3, 50}, torch::requires_grad());
  const torch::Tensor y = sdk::SampleDropout(batch)(x, 0.4, 0, true);
  y.sum().backward();
  const torch::Tensor keep = sdk::SampleDropout(batch).keep_mask(x, 0.4, 0);
  EXPECT_TRUE(torch::allclose(x.grad(), keep.to(torch::kFloat) / 0.6));
}

TEST(SampleDropout, RefusesATensorWhoseFirstDimensionIsNotTheBatch) {
  const sdk::Batch batch = keyed_batch({0, 1, 2}, 0, 1);
  const sdk::SampleDropout drop(batch);
  try {
    drop(torch::ones({4, 2}), 0.5, 0, true);
    FAIL() << "no error";
  } catch (const sdk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("first dimension must be the batch's 3 samples"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace gradsweep::test::models
