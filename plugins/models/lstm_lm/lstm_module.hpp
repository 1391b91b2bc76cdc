#pragma once
// The LSTM language model's network: embedding -> dropout -> stacked LSTM -> dropout, and the softmax
// layer's parameters. Like gpt2, the output projection itself is applied by the loss, which may use only
// some rows of it (sampled softmax).
#include "lstm_config.hpp"

#include <torch/nn/module.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/rnn.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

namespace gradsweep::models::lstm_lm {

// The output layer's parameters: weight (V,H) and bias (V,). Without a weight of its own (tied), the
// loss uses the embedding matrix instead; the bias is always its own.
class OutputLayerImpl : public torch::nn::Module {
 public:
  OutputLayerImpl(std::int64_t vocab_size, std::int64_t hidden_dim, bool own_weight);

  torch::Tensor weight;  // (V,H); undefined when tied
  torch::Tensor bias;    // (V,)
};
TORCH_MODULE(OutputLayer);

class LstmLmImpl : public torch::nn::Module {
 public:
  explicit LstmLmImpl(const LstmConfig& config);

  // idx is (B,T) token ids; returns the top LSTM layer's outputs after dropout, (B,T,H). Every call
  // starts from a zero state: batches are independent windows, not the continuation of the last one.
  torch::Tensor forward(const torch::Tensor& idx);

  // The (V,H) matrix the loss projects with: output.weight, or embedding.weight when tied.
  torch::Tensor output_weight() const;

  torch::nn::Embedding embedding{nullptr};  // (V,E)
  torch::nn::LSTM lstm{nullptr};
  torch::nn::Dropout drop{nullptr};
  OutputLayer output{nullptr};
};
TORCH_MODULE(LstmLm);

}  // namespace gradsweep::models::lstm_lm
