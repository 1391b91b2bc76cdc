#pragma once
// The GPT-2 network up to the final LayerNorm. There is no lm_head module: the output projection is
// the token embedding itself (weight tying), applied by the loss, which may use only some of its rows.
#include "gpt2_config.hpp"
#include "gpt2_layers.hpp"

#include <gradsweep/sdk/model.hpp>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

namespace gradsweep::models::gpt2 {

class Gpt2Impl : public torch::nn::Module {
 public:
  explicit Gpt2Impl(const Gpt2Config& config);

  // idx is (B,T) token ids with T <= block_size; returns the final hidden states, (B,T,C). Dropout is
  // keyed by `drop` (site 0 on the embeddings, then each block's sites in order).
  // With `units`, each block is a unit (SDK 1.4): its hooks are called around it, block i as unit i.
  torch::Tensor forward(const torch::Tensor& idx, const sdk::SampleDropout& drop = {},
                        const sdk::UnitCalls* units = nullptr);

  // (Vp,C), V rounded up to Gpt2Config::vocab_multiple: input embedding and, transposed, the output
  // projection; rows V.. are padding.
  torch::nn::Embedding wte{nullptr};
  torch::nn::Embedding wpe{nullptr};  // (block_size,C)
  torch::nn::ModuleList h{nullptr};   // n_layer Blocks
  torch::nn::LayerNorm ln_f{nullptr};

 private:
  double dropout_;
  std::int64_t vocab_size_;  // wte's real rows
  // GPT-2's initialisation (see the definition for the rules).
  void init_weights(std::int64_t n_layer);
};
TORCH_MODULE(Gpt2);

}  // namespace gradsweep::models::gpt2
