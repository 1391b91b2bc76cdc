#pragma once
// The LSTM language model's network: embedding -> dropout -> stacked LSTM (dropout between layers) ->
// dropout, and the softmax layer's parameters. Like gpt2, the output projection itself is applied by the
// loss, which may use only some rows of it (sampled softmax).
//
// Dropout is the SDK's keyed dropout (sample_dropout.hpp), the one between layers included: LibTorch's
// LSTM would draw that mask from the global generator, which makes it depend on how the host split the
// global batch, so with dropout the layers run one at a time on the same parameters.
#include "lstm_config.hpp"

#include <gradsweep/sdk/model.hpp>
#include <gradsweep/sdk/sample_dropout.hpp>

#include <torch/nn/module.h>
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
  // Dropout sites: 0 on the embeddings, 1 .. n_layer-1 between layers, n_layer on the output.
  // With active `units` (SDK 1.4) the layers run one at a time, layer l as unit l.
  torch::Tensor forward(const torch::Tensor& idx, const sdk::SampleDropout& drop = {},
                        const sdk::UnitCalls* units = nullptr);

  // The (V,H) matrix the loss projects with: output.weight, or embedding.weight when tied.
  torch::Tensor output_weight() const;

  torch::nn::Embedding embedding{nullptr};  // (V,E)
  torch::nn::LSTM lstm{nullptr};            // n_layer layers, without LibTorch's own dropout
  OutputLayer output{nullptr};

 private:
  // The stacked LSTM run layer by layer, with keyed dropout on each layer's output but the top one's.
  torch::Tensor layer_by_layer(torch::Tensor x, const sdk::SampleDropout& drop, const sdk::UnitCalls* units);

  std::int64_t n_layer_;
  std::int64_t hidden_dim_;
  double dropout_;
};
TORCH_MODULE(LstmLm);

}  // namespace gradsweep::models::lstm_lm
