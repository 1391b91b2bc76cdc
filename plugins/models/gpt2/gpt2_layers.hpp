#pragma once
// The pieces of one GPT-2 block: causal self-attention, the GELU MLP, and the pre-LayerNorm block that
// wires them into the residual stream. Submodule names follow OpenAI's checkpoint ("attn.c_attn",
// "mlp.c_proj", ...) so that parameter names read like every other GPT-2 implementation's.
//
// Dropout is the SDK's keyed dropout (sample_dropout.hpp): each call site has its own number, so masks
// depend on the sample and not on how the host split the global batch.
#include "gpt2_config.hpp"

#include <gradsweep/sdk/sample_dropout.hpp>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

namespace gradsweep::models::gpt2 {

// Multi-head attention in which position t sees positions 0..t only.
class CausalSelfAttentionImpl : public torch::nn::Module {
 public:
  CausalSelfAttentionImpl(std::int64_t n_embd, std::int64_t n_head, double dropout, AttentionKernel kernel);
  // x is (B,T,C); returns (B,T,C). Dropout sites `site` (attention weights) and `site`+1 (output).
  torch::Tensor forward(const torch::Tensor& x, const sdk::SampleDropout& drop, std::uint64_t site);

  torch::nn::Linear c_attn{nullptr};  // C -> 3C: query, key and value side by side
  torch::nn::Linear c_proj{nullptr};  // C -> C: back into the residual stream

 private:
  std::int64_t n_head_;
  double dropout_;
  AttentionKernel kernel_;
};
TORCH_MODULE(CausalSelfAttention);

// Position-wise feed-forward: C -> 4C -> GELU (tanh approximation, as GPT-2 was trained) -> C.
class MlpImpl : public torch::nn::Module {
 public:
  MlpImpl(std::int64_t n_embd, double dropout);
  // x is (B,T,C); returns (B,T,C). Dropout site `site`.
  torch::Tensor forward(const torch::Tensor& x, const sdk::SampleDropout& drop, std::uint64_t site);

  torch::nn::Linear c_fc{nullptr};
  torch::nn::Linear c_proj{nullptr};

 private:
  double dropout_;
};
TORCH_MODULE(Mlp);

// Pre-LayerNorm: each branch reads a normalised copy of the stream and adds its result back, so the
// stream itself is never normalised until ln_f.
class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(std::int64_t n_embd, std::int64_t n_head, double dropout, AttentionKernel kernel);
  // Dropout sites of a block: `first` .. `first` + kDropoutSites - 1.
  static constexpr std::uint64_t kDropoutSites = 3;
  // x is (B,T,C); returns (B,T,C).
  torch::Tensor forward(const torch::Tensor& x, const sdk::SampleDropout& drop, std::uint64_t first);

  torch::nn::LayerNorm ln_1{nullptr};
  CausalSelfAttention attn{nullptr};
  torch::nn::LayerNorm ln_2{nullptr};
  Mlp mlp{nullptr};
};
TORCH_MODULE(Block);

}  // namespace gradsweep::models::gpt2
