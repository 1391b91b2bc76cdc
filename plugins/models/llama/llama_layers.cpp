#include "llama_layers.hpp"

#include <ATen/ops/rms_norm.h>
#include <torch/nn/functional/activation.h>

namespace gradsweep::models::llama {
namespace {

torch::nn::Linear projection(std::int64_t in, std::int64_t out) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}

}  // namespace

RmsNormImpl::RmsNormImpl(std::int64_t width, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({width}));
}

torch::Tensor RmsNormImpl::forward(const torch::Tensor& x) { return at::rms_norm(x, {weight.size(0)}, weight, eps_); }

RotaryTables rotary_tables(std::int64_t positions, std::int64_t head_size, double theta, const torch::Device& device) {
  // In float64 and then rounded: the angles of late positions lose no precision to float32's products.
  const auto f64 = torch::TensorOptions().dtype(torch::kDouble);
  const auto inv_freq = torch::pow(theta, -torch::arange(0, head_size, 2, f64) / static_cast<double>(head_size));
  const auto angles = torch::outer(torch::arange(positions, f64), inv_freq);  // (T, hs/2)
  const auto both = torch::cat({angles, angles}, -1);                         // (T, hs)
  return {both.cos().to(torch::kFloat).to(device), both.sin().to(torch::kFloat).to(device)};
}

torch::Tensor apply_rotary(const torch::Tensor& x, const RotaryTables& tables) {
  const std::int64_t T = x.size(2), half = x.size(3) / 2;
  const auto cos = tables.cos.narrow(0, 0, T).to(x.scalar_type());
  const auto sin = tables.sin.narrow(0, 0, T).to(x.scalar_type());
  const auto rotated = torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * cos + rotated * sin;
}

AttentionImpl::AttentionImpl(const LlamaConfig& config)
    : n_head_(config.n_head),
      n_kv_head_(config.n_kv_head),
      head_size_(config.head_size()),
      dropout_(config.dropout),
      kernel_(config.attention) {
  const std::int64_t C = config.n_embd, kv = n_kv_head_ * head_size_;
  q_proj = register_module("q_proj", projection(C, C));
  k_proj = register_module("k_proj", projection(C, kv));
  v_proj = register_module("v_proj", projection(C, kv));
  o_proj = register_module("o_proj", projection(C, C));
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const RotaryTables& rotary, const sdk::SampleDropout& drop,
                                     std::uint64_t site) {
  const std::int64_t B = x.size(0), T = x.size(1), C = x.size(2);
  const auto heads = [&](const torch::Tensor& t, std::int64_t n) {
    return t.view({B, T, n, head_size_}).transpose(1, 2);  // (B,n,T,hs)
  };
  const auto q = apply_rotary(heads(q_proj(x), n_head_), rotary);
  const auto k = apply_rotary(heads(k_proj(x), n_kv_head_), rotary);
  const auto v = heads(v_proj(x), n_kv_head_);
  auto y = causal_attention(q, k, v, {kernel_, &drop, dropout_, site, is_training()});  // (B,nh,T,hs)
  y = y.transpose(1, 2).contiguous().view({B, T, C});
  return drop(o_proj(y), dropout_, site + 1, is_training());
}

MlpImpl::MlpImpl(const LlamaConfig& config) : dropout_(config.dropout) {
  gate_proj = register_module("gate_proj", projection(config.n_embd, config.intermediate_size));
  up_proj = register_module("up_proj", projection(config.n_embd, config.intermediate_size));
  down_proj = register_module("down_proj", projection(config.intermediate_size, config.n_embd));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x, const sdk::SampleDropout& drop, std::uint64_t site) {
  namespace F = torch::nn::functional;
  return drop(down_proj(F::silu(gate_proj(x)) * up_proj(x)), dropout_, site, is_training());
}

BlockImpl::BlockImpl(const LlamaConfig& config) {
  input_layernorm = register_module("input_layernorm", RmsNorm(config.n_embd, config.norm_eps));
  self_attn = register_module("self_attn", Attention(config));
  post_attention_layernorm = register_module("post_attention_layernorm", RmsNorm(config.n_embd, config.norm_eps));
  mlp = register_module("mlp", Mlp(config));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, const RotaryTables& rotary, const sdk::SampleDropout& drop,
                                 std::uint64_t first) {
  auto h = x + self_attn->forward(input_layernorm(x), rotary, drop, first);
  return h + mlp->forward(post_attention_layernorm(h), drop, first + 2);
}

}  // namespace gradsweep::models::llama
