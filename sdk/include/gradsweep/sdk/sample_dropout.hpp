#pragma once
// Keyed dropout (SDK 1.3): a sample's mask is a function of (seed, step, sample index, site, element), so
// any split of the same global batch over ranks and micro-batches drops the same units.
//
// torch::dropout draws from one generator in call order: the mask of sample 5 then depends on which
// samples shared its micro-batch and on how many calls came before it on this rank, and a run at 3 ranks
// or with another micro_batch trains a different model from `single`. Here every (sample, site) gets a
// generator of its own, seeded with a hash of (seed, step, sample index, site) and starting from its
// first number, and draws that sample's uniforms in one call: the same bits wherever the sample sits.
// The generator is a clone of the device's default one (LibTorch's Philox on CUDA, mt19937 on the CPU),
// so a mask costs one small launch per sample and site (GPT-2 124M bf16 with dropout 0.1 on an H200:
// 81,286 tokens/s, 101,635 without); the bits differ between
// devices (a CPU run and a GPU run are different runs anyway). An earlier version hashed every element
// with int64 tensor arithmetic: same bits on every device, but about 35 passes over a (B, H, T, T)
// attention tensor made GPT-2 124M's bf16 step on an H200 4.1x slower (24,611 against 101,125 tokens/s).
//
// Use: build one SampleDropout per forward from the Batch; give each dropout call in the network its own
// fixed `site` number. When the batch carries no keys (evaluation, tests that build a Batch by hand, an
// older host) it falls back to torch::dropout.
#include <gradsweep/sdk/model.hpp>
#include <gradsweep/sdk/status.hpp>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gradsweep::sdk {

namespace detail {

constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// The seed of one (sample, site) generator: every key mixed in, so that neighbouring samples, steps and
// sites get unrelated streams.
constexpr std::uint64_t sample_seed(std::uint64_t seed, std::int64_t step, std::uint64_t site, std::int64_t sample) {
  return splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(step) ^
                                      splitmix64((site + 0x51D3ULL) ^ splitmix64(static_cast<std::uint64_t>(sample)))));
}

}  // namespace detail

class SampleDropout {
 public:
  // Unkeyed: every call is torch::dropout.
  SampleDropout() = default;
  // Keyed when the batch carries sample_ids (a 1.3 host's training micro-batch).
  explicit SampleDropout(const Batch& batch)
      : keyed_(batch.sample_ids.defined()), step_(batch.step), seed_(batch.seed) {
    if (!keyed_) return;
    if (batch.sample_ids.dim() != 1 || batch.sample_ids.scalar_type() != torch::kLong)
      throw Error("Batch::sample_ids must be a (B,) int64 tensor");
    // The seeds are mixed on the host: B integers, copied once per forward.
    const torch::Tensor ids = batch.sample_ids.to(torch::kCPU).contiguous();
    ids_.assign(ids.data_ptr<std::int64_t>(), ids.data_ptr<std::int64_t>() + ids.numel());
  }

  bool keyed() const { return keyed_; }

  // x with each element zeroed with probability p and the rest scaled by 1/(1-p), when training and
  // p > 0; x itself otherwise. x's first dimension is the batch's B. `site` names the dropout call
  // within the network: two sites never share a mask.
  torch::Tensor operator()(const torch::Tensor& x, double p, std::uint64_t site, bool training) const {
    if (!training || p <= 0.0) return x;
    if (!keyed()) return torch::dropout(x, p, /*train=*/true);
    const torch::Tensor keep = keep_mask(x, p, site);
    return x * keep.to(x.scalar_type()).div_(1.0 - p);
  }

  // The keep bits for a tensor shaped like x: (B, ...) bool, true with probability 1-p.
  torch::Tensor keep_mask(const torch::Tensor& x, double p, std::uint64_t site) const {
    if (!keyed()) throw Error("SampleDropout::keep_mask needs a batch with sample_ids");
    const auto batch = static_cast<std::int64_t>(ids_.size());
    if (x.dim() == 0 || x.size(0) != batch)
      throw Error("keyed dropout: the tensor's first dimension must be the batch's " + std::to_string(batch) +
                  " samples");
    torch::Tensor uniform = torch::empty(x.sizes(), x.options().dtype(torch::kFloat));
    // One generator for the call, reseeded per sample (a seed resets the whole engine state). Not a clone
    // of the default on CPU: LibTorch 1.13's Generator::clone() never frees the copy (its weak count starts
    // at 0), which leaked ~2.6 KB per sample, dropout site and step (found by scripts/sanitize.sh).
    at::Generator generator = x.device().is_cpu() ? at::detail::createCPUGenerator()
                                                  : at::globalContext().defaultGenerator(x.device()).clone();
    for (std::int64_t b = 0; b < batch; ++b) {
      generator.set_current_seed(detail::sample_seed(seed_, step_, site, ids_[static_cast<std::size_t>(b)]));
      uniform.select(0, b).uniform_(0.0, 1.0, generator);
    }
    return uniform.ge(p);
  }

 private:
  bool keyed_ = false;
  std::vector<std::int64_t> ids_;  // each sample's index in the step's global batch
  std::int64_t step_ = -1;
  std::uint64_t seed_ = 0;
};

}  // namespace gradsweep::sdk
