#include "vocabulary_sampler.hpp"

#include <gradsweep/sdk/status.hpp>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <string>

namespace gradsweep::strategies {

VocabularySampler::VocabularySampler(torch::Tensor weights, std::int64_t negatives, std::uint64_t seed)
    : weights_(weights.to(torch::kDouble).contiguous()), negatives_(negatives), seed_(seed) {
  if (weights_.dim() != 1 || weights_.numel() == 0) throw sdk::Error("sampled: the vocabulary weights must be (V,)");
  if ((weights_ < 0).any().item<bool>()) throw sdk::Error("sampled: vocabulary weights must be >= 0");
}

torch::Tensor VocabularySampler::unigram_weights(const torch::Tensor& counts, double alpha) {
  return (counts.to(torch::kDouble) + 1.0).pow(alpha);
}

torch::Tensor inclusion_probabilities(const torch::Tensor& q, std::int64_t k) {
  auto expected = [&](double lambda) { return (-torch::expm1(-lambda * q)).sum().item<double>(); };
  // sum(1 - exp(-lambda q)) <= lambda, so lambda >= k; double the upper end until it covers k.
  double lo = static_cast<double>(k), hi = lo;
  for (int i = 0; i < 200 && expected(hi) < static_cast<double>(k); ++i) hi *= 2;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (expected(mid) < static_cast<double>(k) ? lo : hi) = mid;
  }
  return -torch::expm1(-hi * q);
}

sdk::OutputVocabulary VocabularySampler::sample(std::int64_t step, const torch::Tensor& targets) const {
  const std::int64_t vocab = vocab_size();
  const torch::Tensor in_batch = std::get<0>(torch::_unique(targets.flatten().cpu(), /*sorted=*/true));
  if (in_batch.numel() > 0 && in_batch[-1].item<std::int64_t>() >= vocab)
    throw sdk::Error("sampled: target id " + std::to_string(in_batch[-1].item<std::int64_t>()) +
                     " is outside the vocabulary of " + std::to_string(vocab));
  torch::Tensor others = weights_.clone();
  others.index_fill_(0, in_batch, 0.0);
  const std::int64_t drawable = (others > 0).sum().item<std::int64_t>();
  const std::int64_t k = std::min(negatives_, drawable);

  sdk::OutputVocabulary out;
  torch::Tensor negatives, log_pi;
  if (k == drawable) {  // every drawable word is in: nothing is estimated
    negatives = (others > 0).nonzero().flatten();
    log_pi = torch::zeros({negatives.numel()}, torch::kDouble);
  } else {
    // Efraimidis-Spirakis: the k smallest Exp(1)/w are a draw without replacement proportional to w.
    // One generator per (seed, step): the same draw on every rank and after a resume.
    auto generator = at::detail::createCPUGenerator(seed_ * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(step));
    const torch::Tensor keys = torch::empty({vocab}, torch::kDouble).exponential_(1.0, generator).div_(others);
    negatives = std::get<1>(keys.topk(k, /*dim=*/0, /*largest=*/false, /*sorted=*/true));
    const torch::Tensor pi = inclusion_probabilities(others / others.sum(), k);
    log_pi = pi.index_select(0, negatives).log();
  }
  out.rows = torch::cat({in_batch, negatives});
  out.log_q = torch::cat({torch::zeros({in_batch.numel()}, torch::kDouble), log_pi}).to(torch::kFloat);
  return out;
}

}  // namespace gradsweep::strategies
