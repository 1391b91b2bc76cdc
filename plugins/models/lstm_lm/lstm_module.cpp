#include "lstm_module.hpp"

#include <torch/utils.h>

#include <string>
#include <tuple>
#include <vector>

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

LstmLmImpl::LstmLmImpl(const LstmConfig& config)
    : n_layer_(config.n_layer), hidden_dim_(config.hidden_dim), dropout_(config.dropout) {
  // Registration order is the parameter order every rank reports: embedding, lstm (layer by layer:
  // weight_ih, weight_hh, bias_ih, bias_hh), output.
  embedding = register_module("embedding", torch::nn::Embedding(config.vocab_size, config.emb_dim));
  lstm = register_module(
      "lstm",
      torch::nn::LSTM(
          torch::nn::LSTMOptions(config.emb_dim, config.hidden_dim).num_layers(config.n_layer).batch_first(true)));
  output = register_module("output", OutputLayer(config.vocab_size, config.hidden_dim, !config.tie_weights));

  torch::NoGradGuard no_grad;
  embedding->weight.uniform_(-kTokenMatrixInitRange, kTokenMatrixInitRange);
}

torch::Tensor LstmLmImpl::forward(const torch::Tensor& idx, const sdk::SampleDropout& drop,
                                  const sdk::UnitCalls* units) {
  auto x = drop(embedding(idx), dropout_, 0, is_training());  // (B,T,E)
  // Without dropout between layers the fused multi-layer kernel computes the same thing, faster.
  const bool between = n_layer_ > 1 && dropout_ > 0.0 && is_training();
  const bool unit_by_unit = units != nullptr && units->active();
  auto h = between || unit_by_unit ? layer_by_layer(x, drop, units)
                                   : std::get<0>(lstm->forward(x));  // (B,T,H): the top layer
  return drop(h, dropout_, static_cast<std::uint64_t>(n_layer_), is_training());
}

torch::Tensor LstmLmImpl::layer_by_layer(torch::Tensor x, const sdk::SampleDropout& drop, const sdk::UnitCalls* units) {
  const auto weights = lstm->named_parameters(/*recurse=*/false);
  const auto zeros = torch::zeros({1, x.size(0), hidden_dim_}, x.options());
  for (std::int64_t layer = 0; layer < n_layer_; ++layer) {
    const std::string l = std::to_string(layer);
    const std::vector<torch::Tensor> params{weights["weight_ih_l" + l], weights["weight_hh_l" + l],
                                            weights["bias_ih_l" + l], weights["bias_hh_l" + l]};
    const auto unit = static_cast<std::size_t>(layer);
    if (units != nullptr) units->begin(unit);
    x = std::get<0>(torch::lstm(x, {zeros, zeros}, params, /*has_biases=*/true, /*num_layers=*/1, /*dropout=*/0.0,
                                /*train=*/true, /*bidirectional=*/false, /*batch_first=*/true));
    if (units != nullptr) x = units->end(unit, x);
    if (layer + 1 < n_layer_) x = drop(x, dropout_, static_cast<std::uint64_t>(layer + 1), is_training());
  }
  return x;
}

torch::Tensor LstmLmImpl::output_weight() const {
  return output->weight.defined() ? output->weight : embedding->weight;
}

}  // namespace gradsweep::models::lstm_lm
