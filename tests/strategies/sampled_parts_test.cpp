// The parts of the `sampled` strategy, in process: the vocabulary draw, the row-sparse packing, and the
// trainer's re-indexing of targets into the drawn rows, checked against a full softmax.
#include "lm_loss.hpp"                  // plugins/models/common
#include "row_sparse_layout.hpp"        // plugins/strategies/sampled
#include "train/output_vocabulary.hpp"  // host
#include "vocabulary_sampler.hpp"       // plugins/strategies/sampled
#include "data/token_shard.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace gradsweep::strategies {
namespace {

constexpr std::int64_t kVocab = 500;

torch::Tensor zipf_counts() {  // a word-frequency-like shape: count ~ 1/rank
  return (1000.0 / torch::arange(1, kVocab + 1, torch::kDouble)).floor().to(torch::kLong);
}

torch::Tensor some_targets(std::int64_t seed) {
  torch::manual_seed(static_cast<std::uint64_t>(seed));
  return torch::randint(0, 60, {4, 16}, torch::kLong);  // mostly frequent words, as in text
}

TEST(VocabularySampler, HoldsEveryTargetOnceAndTheRequestedNumberOfNegatives) {
  const VocabularySampler sampler(VocabularySampler::unigram_weights(zipf_counts(), 0.75), 100, 3);
  const torch::Tensor targets = some_targets(1);
  const auto vocabulary = sampler.sample(5, targets);
  const auto distinct_targets = std::get<0>(torch::_unique(targets.flatten()));
  EXPECT_EQ(vocabulary.rows.numel(), distinct_targets.numel() + 100);
  EXPECT_EQ(std::get<0>(torch::_unique(vocabulary.rows)).numel(), vocabulary.rows.numel()) << "rows must be distinct";
  EXPECT_TRUE(torch::isin(targets.flatten(), vocabulary.rows).all().item<bool>());
  // Targets are always in (log q = 0); negatives carry log pi < 0.
  const auto t = distinct_targets.numel();
  EXPECT_TRUE(vocabulary.log_q.narrow(0, 0, t).eq(0).all().item<bool>());
  EXPECT_TRUE(vocabulary.log_q.narrow(0, t, 100).lt(0).all().item<bool>());
}

TEST(VocabularySampler, SameStepSameRowsOnEveryInstanceAndOtherStepsDiffer) {
  // Each rank builds its own sampler: nothing but (seed, step, targets) may decide the draw.
  const auto weights = VocabularySampler::unigram_weights(zipf_counts(), 0.75);
  const VocabularySampler a(weights, 64, 9), b(weights, 64, 9), other_seed(weights, 64, 10);
  const torch::Tensor targets = some_targets(2);
  EXPECT_TRUE(torch::equal(a.sample(7, targets).rows, b.sample(7, targets).rows));
  EXPECT_TRUE(torch::equal(a.sample(7, targets).log_q, b.sample(7, targets).log_q));
  EXPECT_FALSE(torch::equal(a.sample(7, targets).rows, a.sample(8, targets).rows));
  EXPECT_FALSE(torch::equal(a.sample(7, targets).rows, other_seed.sample(7, targets).rows));
}

TEST(VocabularySampler, UnigramDrawsFrequentWordsMoreOftenThanUniform) {
  const torch::Tensor targets = torch::tensor({0}, torch::kLong);
  const VocabularySampler unigram(VocabularySampler::unigram_weights(zipf_counts(), 1.0), 20, 1);
  const VocabularySampler uniform(torch::ones({kVocab}, torch::kDouble), 20, 1);
  auto mean_id = [&](const VocabularySampler& s) {
    double sum = 0;
    for (int step = 0; step < 200; ++step)
      sum += s.sample(step, targets).rows.narrow(0, 1, 20).to(torch::kDouble).mean().item<double>();
    return sum / 200;
  };
  EXPECT_NEAR(mean_id(uniform), kVocab / 2.0, 25.0);
  EXPECT_LT(mean_id(unigram), kVocab / 4.0);
}

TEST(VocabularySampler, InclusionProbabilitiesSumToTheDrawAndAreExactWhenUniform) {
  const auto q = VocabularySampler::unigram_weights(zipf_counts(), 0.75);
  const auto pi = inclusion_probabilities(q / q.sum(), 50);
  EXPECT_NEAR(pi.sum().item<double>(), 50.0, 1e-6);
  EXPECT_TRUE(pi.le(1.0).all().item<bool>());
  const auto uniform = inclusion_probabilities(torch::full({kVocab}, 1.0 / kVocab, torch::kDouble), 50);
  EXPECT_TRUE(torch::allclose(uniform, torch::full({kVocab}, 50.0 / kVocab, torch::kDouble), 1e-9, 1e-12));
}

TEST(VocabularySampler, KCoveringTheVocabularyGivesExactlyTheFullSoftmaxLoss) {
  torch::manual_seed(0);
  const torch::Tensor hidden = torch::randn({4, 16, 8});
  const torch::Tensor weight = torch::randn({kVocab, 8}), bias = torch::randn({kVocab});
  const torch::Tensor targets = some_targets(3);
  const sdk::Batch batch{torch::zeros_like(targets), targets};
  const VocabularySampler everything(torch::ones({kVocab}, torch::kDouble), kVocab, 1);
  const auto vocabulary = everything.sample(0, targets);
  ASSERT_EQ(vocabulary.rows.numel(), kVocab);
  const sdk::OutputSubset subset = train::restrict_targets(vocabulary, targets, kVocab, 0);
  const double full = models::lm_head_loss(hidden, weight, bias, batch, nullptr).item<double>();
  const double sampled = models::lm_head_loss(hidden, weight, bias, batch, &subset).item<double>();
  EXPECT_NEAR(sampled, full, 1e-5 * full);
  // With fewer rows the sampled loss is a different (smaller-partition) estimate, but finite.
  const VocabularySampler some(torch::ones({kVocab}, torch::kDouble), 32, 1);
  const auto small = train::restrict_targets(some.sample(0, targets), targets, kVocab, 0);
  EXPECT_TRUE(std::isfinite(models::lm_head_loss(hidden, weight, bias, batch, &small).item<double>()));
}

TEST(RestrictTargets, RefusesRowsThatLackATarget) {
  sdk::OutputVocabulary vocabulary{torch::tensor({1, 2, 3}, torch::kLong), {}};
  try {
    train::restrict_targets(vocabulary, torch::tensor({{1, 4}}, torch::kLong), 10, 12);
    FAIL() << "a missing target was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("step 12"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("lacks target id 4"), std::string::npos) << e.what();
  }
}

TEST(CountTokens, CountsEveryTokenOfTheShardOrItsFirstTokens) {
  const auto shard = data::TokenShard::open(test::word_corpus() / "train.bin");
  const torch::Tensor counts = train::count_tokens(shard, test::kWordCorpusVocab);
  ASSERT_EQ(counts.numel(), test::kWordCorpusVocab);
  EXPECT_EQ(counts.sum().item<std::int64_t>(), static_cast<std::int64_t>(shard.size()));
  EXPECT_EQ(counts[shard.tokens()[0]].item<std::int64_t>() > 0, true);
  const torch::Tensor first = train::count_tokens(shard, test::kWordCorpusVocab, 1000);
  EXPECT_EQ(first.sum().item<std::int64_t>(), 1000);
  EXPECT_TRUE(first.le(counts).all().item<bool>());
}

TEST(RowSparseLayout, PackedRowsSumAndUnpackToTheDenseGradient) {
  torch::manual_seed(1);
  std::vector<sdk::Parameter> params{{"embedding", torch::zeros({kVocab, 6}, torch::requires_grad()), true},
                                     {"lstm", torch::zeros({5, 7}, torch::requires_grad()), false},
                                     {"output", torch::zeros({kVocab, 4}, torch::requires_grad()), true}};
  std::vector<torch::Tensor> tensors;
  for (auto& p : params) tensors.push_back(p.tensor);
  const torch::Tensor rows = torch::tensor({3, 17, 42, 499}, torch::kLong);
  // Two ranks' gradients, zero outside `rows` (as a sampled softmax leaves them).
  auto gradient = [&](int seed) {
    torch::manual_seed(static_cast<std::uint64_t>(seed));
    std::vector<torch::Tensor> g;
    for (const auto& p : params) {
      torch::Tensor d = torch::randn(p.tensor.sizes());
      if (p.row_sparse) d = torch::zeros_like(d).index_copy(0, rows, d.index_select(0, rows));
      g.push_back(d);
    }
    return g;
  };
  const auto g0 = gradient(10), g1 = gradient(11);
  const RowSparseLayout layout(params);
  EXPECT_EQ(layout.numel(4), 35 + 4 * 10);
  EXPECT_EQ(layout.dense_numel(), kVocab * 10 + 35);
  torch::Tensor sum = torch::zeros({layout.numel(4)});
  for (const auto* g : {&g0, &g1}) {
    for (std::size_t i = 0; i < params.size(); ++i) tensors[i].mutable_grad() = (*g)[i].clone();
    torch::Tensor packed = torch::empty({layout.numel(4)});
    layout.pack_gradients(tensors, rows, packed);
    sum += packed;
  }
  layout.unpack_gradients(sum, rows, 0.5, tensors);
  for (std::size_t i = 0; i < params.size(); ++i)
    EXPECT_TRUE(torch::equal(tensors[i].grad(), (g0[i] + g1[i]).mul(0.5))) << params[i].name;

  // Parameters: only the packed rows are written.
  torch::Tensor values = torch::arange(layout.numel(4), torch::kFloat);
  layout.unpack_parameters(values, rows, tensors);
  EXPECT_EQ(tensors[0][17][0].item<float>(), 6.0f);
  EXPECT_EQ(tensors[0][18].abs().sum().item<float>(), 0.0f);
  torch::Tensor back = torch::empty_like(values);
  layout.pack_parameters(tensors, rows, back);
  EXPECT_TRUE(torch::equal(back, values));
}

}  // namespace
}  // namespace gradsweep::strategies
