#pragma once
// The Llama network up to the final RMSNorm, and its output head: a matrix of its own, or the token
// embedding itself when tie_embeddings is set. The loss applies the head (it may use only some rows).
#include "llama_config.hpp"
#include "llama_layers.hpp"

#include <gradsweep/sdk/model.hpp>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/pimpl.h>

namespace gradsweep::models::llama {

class LlamaImpl : public torch::nn::Module {
 public:
  explicit LlamaImpl(const LlamaConfig& config);

  // idx is (B,T) token ids with T <= block_size; returns the final hidden states, (B,T,C). Dropout is
  // keyed by `drop` (site 0 on the embeddings, then each block's sites in order). With `units`, block i
  // is unit i (SDK 1.4): its hooks are called around it.
  torch::Tensor forward(const torch::Tensor& idx, const sdk::SampleDropout& drop = {},
                        const sdk::UnitCalls* units = nullptr);
  // The (Vp,C) matrix the logits are taken with.
  const torch::Tensor& head_weight() const { return lm_head ? lm_head->weight : embed_tokens->weight; }

  torch::nn::Embedding embed_tokens{nullptr};  // (Vp,C), V rounded up to vocab_multiple
  torch::nn::ModuleList layers{nullptr};       // n_layer Blocks
  RmsNorm norm{nullptr};
  torch::nn::Linear lm_head{nullptr};  // (Vp,C) without bias; absent when tied

 private:
  void init_weights(const LlamaConfig& config);

  double dropout_;
  RotaryTables rotary_;  // on the device of the last forward; made for block_size positions
  std::int64_t block_size_, head_size_;
  double rope_theta_;
};
TORCH_MODULE(Llama);

}  // namespace gradsweep::models::llama
