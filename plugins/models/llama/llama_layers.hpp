#pragma once
// The pieces of one Llama block: RMSNorm, rotary position embeddings, grouped-query causal attention, the
// SwiGLU MLP, and the pre-norm block that wires them into the residual stream. Submodule names follow
// Hugging Face's LlamaForCausalLM ("self_attn.q_proj", "mlp.gate_proj", "input_layernorm") so that
// parameter names read as in every other Llama implementation. No linear layer has a bias.
#include "llama_config.hpp"

#include <gradsweep/sdk/sample_dropout.hpp>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

namespace gradsweep::models::llama {

// x / rms(x) * weight over the last dimension; LibTorch's fused kernel on GPU.
class RmsNormImpl : public torch::nn::Module {
 public:
  RmsNormImpl(std::int64_t width, double eps);
  torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RmsNorm);

// The rotary tables for positions 0..T-1: cos and sin of position x frequency, (T, head_size), each
// frequency twice (the halves convention of Llama's reference and Hugging Face's rotate_half).
struct RotaryTables {
  torch::Tensor cos, sin;
};
RotaryTables rotary_tables(std::int64_t positions, std::int64_t head_size, double theta, const torch::Device& device);
// x is (B,h,T,hs): each feature pair (i, i + hs/2) turned by its position's angle.
torch::Tensor apply_rotary(const torch::Tensor& x, const RotaryTables& tables);

class AttentionImpl : public torch::nn::Module {
 public:
  explicit AttentionImpl(const LlamaConfig& config);
  // x is (B,T,C); returns (B,T,C). Dropout sites `site` (attention weights) and `site`+1 (output).
  torch::Tensor forward(const torch::Tensor& x, const RotaryTables& rotary, const sdk::SampleDropout& drop,
                        std::uint64_t site);

  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};

 private:
  std::int64_t n_head_, n_kv_head_, head_size_;
  double dropout_;
  AttentionKernel kernel_;
};
TORCH_MODULE(Attention);

// down(silu(gate(x)) * up(x)).
class MlpImpl : public torch::nn::Module {
 public:
  explicit MlpImpl(const LlamaConfig& config);
  torch::Tensor forward(const torch::Tensor& x, const sdk::SampleDropout& drop, std::uint64_t site);

  torch::nn::Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};

 private:
  double dropout_;
};
TORCH_MODULE(Mlp);

class BlockImpl : public torch::nn::Module {
 public:
  explicit BlockImpl(const LlamaConfig& config);
  // Dropout sites of a block: `first` .. `first` + kDropoutSites - 1.
  static constexpr std::uint64_t kDropoutSites = 3;
  torch::Tensor forward(const torch::Tensor& x, const RotaryTables& rotary, const sdk::SampleDropout& drop,
                        std::uint64_t first);

  RmsNorm input_layernorm{nullptr};
  Attention self_attn{nullptr};
  RmsNorm post_attention_layernorm{nullptr};
  Mlp mlp{nullptr};
};
TORCH_MODULE(Block);

}  // namespace gradsweep::models::llama
