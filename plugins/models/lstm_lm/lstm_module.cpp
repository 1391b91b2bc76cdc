#include "lstm_module.hpp"

#include <torch/utils.h>

#include <tuple>

namespace gradsweep::models::lstm_lm {
namespace {

// The initial range of PyTorch's word_language_model example (Zaremba et al.'s PTB setup) for both
// token-indexed matrices; the LSTM keeps LibTorch's own U(-1/sqrt(H), 1/sqrt(H)).
constexpr double kTokenMatrixInitRange = 0.1;

}  // namespace

OutputLayerImpl::OutputLayerImpl(std::int64_t vocab_size, std::int64_t hidden_dim, bool own_weight) {
  torch::NoGradGuard no_grad;
  if (own_weight)
    weight = register_parameter(
        "weight", torch::empty({vocab_size, hidden_dim}).uniform_(-kTokenMatrixInitRange, kTokenMatrixInitRange));
  bias = register_parameter("bias", torch::zeros({vocab_size}));
}

LstmLmImpl::LstmLmImpl(const LstmConfig& config) {
  // Registration order is the parameter order every rank reports: embedding, lstm (layer by layer:
  // weight_ih, weight_hh, bias_ih, bias_hh), output.
  embedding = register_module("embedding", torch::nn::Embedding(config.vocab_size, config.emb_dim));
  // LibTorch's own dropout between stacked layers; with one layer there is no "between" (and it warns).
  const double between_layers = config.n_layer > 1 ? config.dropout : 0.0;
  lstm = register_module("lstm", torch::nn::LSTM(torch::nn::LSTMOptions(config.emb_dim, config.hidden_dim)
                                                     .num_layers(config.n_layer)
                                                     .batch_first(true)
                                                     .dropout(between_layers)));
  drop = register_module("drop", torch::nn::Dropout(config.dropout));
  output = register_module("output", OutputLayer(config.vocab_size, config.hidden_dim, !config.tie_weights));

  torch::NoGradGuard no_grad;
  embedding->weight.uniform_(-kTokenMatrixInitRange, kTokenMatrixInitRange);
}

torch::Tensor LstmLmImpl::forward(const torch::Tensor& idx) {
  auto x = drop(embedding(idx));           // (B,T,E)
  auto h = std::get<0>(lstm->forward(x));  // (B,T,H): the top layer at every step
  return drop(h);
}

torch::Tensor LstmLmImpl::output_weight() const {
  return output->weight.defined() ? output->weight : embedding->weight;
}

}  // namespace gradsweep::models::lstm_lm
