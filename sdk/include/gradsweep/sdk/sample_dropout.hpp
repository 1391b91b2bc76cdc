#pragma once
// Keyed dropout (SDK 1.3): a sample's mask is a function of (seed, step, sample index, site, element), so
// any split of the same global batch over ranks and micro-batches drops the same units.
//
// torch::dropout draws from one generator in call order: the mask of sample 5 then depends on which
// samples shared its micro-batch and on how many calls came before it on this rank, and a run at 3 ranks
// or with another micro_batch trains a different model from `single`. Here each element's keep bit is a
// counter-based hash (splitmix64 for the scalar keys, the murmur3 finaliser over 32-bit words for the
// per-element part) computed with int64 tensor ops that never overflow, so it runs on any device and
// gives the same bits on each.
//
// Use: build one SampleDropout per forward from the Batch; give each dropout call in the network its own
// fixed `site` number. When the batch carries no keys (evaluation, tests that build a Batch by hand, an
// older host) it falls back to torch::dropout.
#include <gradsweep/sdk/model.hpp>
#include <gradsweep/sdk/status.hpp>

#include <torch/types.h>

#include <cstdint>
#include <string>

namespace gradsweep::sdk {

namespace detail {

constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

constexpr std::int64_t kLow32 = 0xFFFFFFFFLL;

// (a * c) mod 2^32 for int64 values a in [0, 2^32): c is split into 16-bit halves so that no partial
// product reaches 2^63 (signed overflow would make the result depend on the kernel).
inline torch::Tensor mul32(const torch::Tensor& a, std::uint32_t c) {
  const auto low = static_cast<std::int64_t>(c & 0xFFFFu), high = static_cast<std::int64_t>(c >> 16);
  return (a * low + (a * high).bitwise_and(0xFFFF) * 65536).bitwise_and(kLow32);
}

// murmur3's 32-bit finaliser on int64 values in [0, 2^32): every input bit reaches every output bit.
inline torch::Tensor fmix32(torch::Tensor h) {
  h = h.bitwise_xor(h.bitwise_right_shift(16));
  h = mul32(h, 0x85EBCA6Bu);
  h = h.bitwise_xor(h.bitwise_right_shift(13));
  h = mul32(h, 0xC2B2AE35u);
  return h.bitwise_xor(h.bitwise_right_shift(16));
}

}  // namespace detail

class SampleDropout {
 public:
  // Unkeyed: every call is torch::dropout.
  SampleDropout() = default;
  // Keyed when the batch carries sample_ids (a 1.3 host's training micro-batch).
  explicit SampleDropout(const Batch& batch) : sample_ids_(batch.sample_ids), step_(batch.step), seed_(batch.seed) {
    if (sample_ids_.defined() && (sample_ids_.dim() != 1 || sample_ids_.scalar_type() != torch::kLong))
      throw Error("Batch::sample_ids must be a (B,) int64 tensor");
  }

  bool keyed() const { return sample_ids_.defined(); }

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
    const std::int64_t batch = sample_ids_.size(0);
    if (x.dim() == 0 || x.size(0) != batch)
      throw Error("keyed dropout: the tensor's first dimension must be the batch's " + std::to_string(batch) +
                  " samples");
    const std::int64_t per_sample = batch == 0 ? 0 : x.numel() / batch;
    if (per_sample > detail::kLow32) throw Error("keyed dropout: more than 2^32 elements per sample");
    // Everything but the sample and the element is a scalar: mixed here, on the host, in uint64.
    const std::uint64_t base = detail::splitmix64(
        seed_ ^ detail::splitmix64(static_cast<std::uint64_t>(step_) ^ detail::splitmix64(site + 0x51D3ULL)));
    const auto base_low = static_cast<std::int64_t>(base & 0xFFFFFFFFULL);
    const auto base_high = static_cast<std::int64_t>(base >> 32);
    const torch::Tensor ids = sample_ids_.to(x.device());
    torch::Tensor key = detail::fmix32(ids.bitwise_and(detail::kLow32).bitwise_xor(base_low));
    key = detail::fmix32(key.bitwise_xor(ids.bitwise_right_shift(32).bitwise_and(detail::kLow32)).bitwise_xor(base_high));
    const torch::Tensor element = torch::arange(per_sample, ids.options());  // (N,)
    // Two rounds keyed by the sample: (B,1) against (N,) broadcasts to (B,N).
    torch::Tensor h = detail::fmix32((detail::mul32(element, 0x9E3779B9u).unsqueeze(0) + key.unsqueeze(1))
                                         .bitwise_and(detail::kLow32));
    h = detail::fmix32(h.bitwise_xor(detail::fmix32(key.bitwise_xor(std::int64_t{0x5BD1E995})).unsqueeze(1)));
    const auto threshold = static_cast<std::int64_t>(p * 4294967296.0);
    return h.ge(threshold).view(x.sizes());
  }

 private:
  torch::Tensor sample_ids_;
  std::int64_t step_ = -1;
  std::uint64_t seed_ = 0;
};

}  // namespace gradsweep::sdk
