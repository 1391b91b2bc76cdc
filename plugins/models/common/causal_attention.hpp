#pragma once
// Causal attention over heads, by LibTorch's fused kernel or the explicit one, shared by the model plugins
// that have attention (header-only: compiled into each plugin, which stays self-contained).
//
// Dropout is the SDK's keyed dropout (sample_dropout.hpp). The fused kernel draws its own dropout mask,
// which cannot be keyed by sample, so the batch split would change the masks: while training with dropout
// > 0 the explicit kernel runs whatever was chosen.
#include <gradsweep/sdk/sample_dropout.hpp>
#include <gradsweep/sdk/status.hpp>

#include <ATen/ops/scaled_dot_product_attention.h>
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace gradsweep::models {

// The model option `attention`.
enum class AttentionKernel {
  // scaled_dot_product_attention with is_causal: flash or cuDNN kernels on GPU, the fused flash kernel on
  // CPU; no (T,T) score matrix is kept for backward.
  Fused,
  // matmul + mask + softmax + matmul: the reference the fused kernel is tested against, and the keyed
  // dropout path.
  Explicit,
};

inline AttentionKernel parse_attention_kernel(const std::string& value, const std::string& model) {
  if (value == "fused") return AttentionKernel::Fused;
  if (value == "explicit") return AttentionKernel::Explicit;
  throw sdk::Error(model + ": attention '" + value + "' is not one of fused, explicit");
}

// What one attention call needs besides q, k and v.
struct AttentionCall {
  AttentionKernel kernel = AttentionKernel::Fused;
  const sdk::SampleDropout* drop = nullptr;
  double dropout = 0.0;
  std::uint64_t site = 0;  // the dropout site of the attention weights
  bool training = false;
};

// q is (B,nh,T,hs); k and v are (B,nkv,T,hs) with nkv dividing nh (grouped-query attention: each key and
// value head serves nh/nkv query heads). Returns (B,nh,T,hs).
inline torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                      const AttentionCall& call) {
  const bool grouped = k.size(1) != q.size(1);
  const bool keyed_dropout = call.training && call.dropout > 0.0;
  const std::int64_t groups = q.size(1) / k.size(1);
  // CUDA's flash and cuDNN kernels read grouped key/value heads in place (enable_gqa); LibTorch's CPU flash
  // kernel does not take them and would fall back to the unfused math, so on a CPU they are repeated first.
  const bool repeat = grouped && (!q.is_cuda() || call.kernel == AttentionKernel::Explicit || keyed_dropout);
  const torch::Tensor keys = repeat ? k.repeat_interleave(groups, 1) : k;
  const torch::Tensor values = repeat ? v.repeat_interleave(groups, 1) : v;
  if (call.kernel == AttentionKernel::Fused && !keyed_dropout)
    return at::scaled_dot_product_attention(q, keys, values, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true,
                                            /*scale=*/std::nullopt, /*enable_gqa=*/grouped && !repeat);
  const std::int64_t T = q.size(2);
  auto att = torch::matmul(q, keys.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(q.size(3))));
  // True above the diagonal: key positions that lie in the query's future. A fresh (T,T) mask per call
  // costs nothing next to the (B,nh,T,T) scores, and follows the input to whatever device it is on.
  const auto future = torch::ones({T, T}, torch::TensorOptions().dtype(torch::kBool).device(q.device())).triu(1);
  att = att.masked_fill(future, -std::numeric_limits<float>::infinity());
  att = torch::softmax(att, /*dim=*/-1);
  if (call.drop != nullptr) att = (*call.drop)(att, call.dropout, call.site, call.training);
  return torch::matmul(att, values);
}

}  // namespace gradsweep::models
