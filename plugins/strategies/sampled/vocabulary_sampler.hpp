#pragma once
// Which vocabulary rows a step's sampled softmax scores (Jean et al. 2015; the reading of Xiao et al.
// 2017 in docs/strategies.md): every target word of the global batch, plus K negatives drawn without
// replacement from the other words with probability proportional to `weights` (unigram^alpha or
// uniform).
//
// The draw depends only on (seed, step, targets), so every rank computes the same rows without a
// message. log_q is the sampled-softmax correction, chosen so that the subset's partition sum is an
// unbiased (Horvitz-Thompson) estimate of the full one: targets are always in and get 0; a negative w
// is in with probability pi(w) and gets log pi(w). When K covers every other word, all pi are 1 and the
// loss is exactly the full-softmax loss.
#include <gradsweep/sdk/strategy.hpp>

#include <torch/types.h>

#include <cstdint>

namespace gradsweep::strategies {

class VocabularySampler {
 public:
  VocabularySampler() = default;
  // weights: (V,) non-negative; words of weight 0 are never drawn as negatives.
  VocabularySampler(torch::Tensor weights, std::int64_t negatives, std::uint64_t seed);

  // (counts + 1)^alpha: add-one smoothing keeps words unseen in training drawable.
  static torch::Tensor unigram_weights(const torch::Tensor& counts, double alpha);

  std::int64_t vocab_size() const { return weights_.numel(); }
  std::int64_t negatives() const { return negatives_; }

  // rows = [sorted distinct targets, then the negatives], log_q alike; targets is any int64 tensor.
  sdk::OutputVocabulary sample(std::int64_t step, const torch::Tensor& targets) const;

 private:
  torch::Tensor weights_;  // (V,) float64
  std::int64_t negatives_ = 0;
  std::uint64_t seed_ = 0;
};

// Inclusion probabilities of k draws without replacement from probabilities q (sum 1), by the Poisson
// approximation pi = 1 - exp(-lambda q) with lambda chosen so that sum(pi) = k. Exact for uniform q.
torch::Tensor inclusion_probabilities(const torch::Tensor& q, std::int64_t k);

}  // namespace gradsweep::strategies
