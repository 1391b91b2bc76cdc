#include "gpt2_layers.hpp"

#include <torch/nn/functional/activation.h>

namespace gradsweep::models::gpt2 {

CausalSelfAttentionImpl::CausalSelfAttentionImpl(std::int64_t n_embd, std::int64_t n_head, double dropout,
                                                 AttentionKernel kernel)
    : n_head_(n_head), dropout_(dropout), kernel_(kernel) {
  c_attn = register_module("c_attn", torch::nn::Linear(n_embd, 3 * n_embd));
  c_proj = register_module("c_proj", torch::nn::Linear(n_embd, n_embd));
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x, const sdk::SampleDropout& drop,
                                               std::uint64_t site) {
  const std::int64_t B = x.size(0), T = x.size(1), C = x.size(2);
  const std::int64_t head_size = C / n_head_;
  auto qkv = c_attn(x).split(C, /*dim=*/2);  // three (B,T,C)
  auto split_heads = [&](const torch::Tensor& t) {
    return t.view({B, T, n_head_, head_size}).transpose(1, 2);  // (B,nh,T,hs)
  };
  const auto q = split_heads(qkv[0]);
  const auto k = split_heads(qkv[1]);
  const auto v = split_heads(qkv[2]);
  auto y = causal_attention(q, k, v, {kernel_, &drop, dropout_, site, is_training()});  // (B,nh,T,hs)
  y = y.transpose(1, 2).contiguous().view({B, T, C});                                   // heads side by side again
  return drop(c_proj(y), dropout_, site + 1, is_training());
}

MlpImpl::MlpImpl(std::int64_t n_embd, double p) : dropout_(p) {
  c_fc = register_module("c_fc", torch::nn::Linear(n_embd, 4 * n_embd));
  c_proj = register_module("c_proj", torch::nn::Linear(4 * n_embd, n_embd));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x, const sdk::SampleDropout& drop, std::uint64_t site) {
  namespace F = torch::nn::functional;
  return drop(c_proj(F::gelu(c_fc(x), F::GELUFuncOptions().approximate("tanh"))), dropout_, site, is_training());
}

BlockImpl::BlockImpl(std::int64_t n_embd, std::int64_t n_head, double dropout, AttentionKernel kernel) {
  ln_1 = register_module("ln_1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({n_embd})));
  attn = register_module("attn", CausalSelfAttention(n_embd, n_head, dropout, kernel));
  ln_2 = register_module("ln_2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({n_embd})));
  mlp = register_module("mlp", Mlp(n_embd, dropout));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, const sdk::SampleDropout& drop, std::uint64_t first) {
  auto h = x + attn->forward(ln_1(x), drop, first);
  return h + mlp->forward(ln_2(h), drop, first + 2);
}

}  // namespace gradsweep::models::gpt2
