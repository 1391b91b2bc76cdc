#include "lstm_config.hpp"

#include "presets.hpp"  // plugins/models/common

#include <gradsweep/sdk/status.hpp>

#include <vector>

namespace gradsweep::models::lstm_lm {
namespace {

// docs/models.md lists these with their exact parameter counts; change both together.
const std::vector<NamedPreset<LstmConfig>>& presets() {
  static const std::vector<NamedPreset<LstmConfig>> table{
      // Xiao et al. (IJCAI 2017) trained an LSTM LM on PTB; the paper's exact sizes are not known to us.
      // This is the usual "medium" PTB LSTM shape at width 512: 10k vocabulary, 2 layers, untied.
      {"lstm-xiao2017", {10000, 512, 512, 2, 0.0, false}},
      // The same shape at half the width, for one CPU core.
      {"lstm-small-cpu", {10000, 256, 256, 2, 0.0, false}},
      // For tests: a byte vocabulary and one thin layer.
      {"lstm-tiny", {256, 32, 64, 1, 0.0, false}},
  };
  return table;
}

}  // namespace

LstmConfig resolve_config(const sdk::Options& options) {
  LstmConfig config = resolve_sizes<LstmConfig>(options, presets(), "lstm_lm",
                                                {{"vocab_size", &LstmConfig::vocab_size},
                                                 {"emb_dim", &LstmConfig::emb_dim},
                                                 {"hidden_dim", &LstmConfig::hidden_dim},
                                                 {"n_layer", &LstmConfig::n_layer}});
  config.dropout = resolve_dropout(options, "lstm_lm");
  config.tie_weights = options.flag("tie_weights");
  // Tying reuses the (V,E) embedding as the (V,H) output matrix, so the two widths must agree. We refuse
  // rather than insert a hidden H->E projection: that would be a different model under the same name.
  if (config.tie_weights && config.emb_dim != config.hidden_dim)
    throw sdk::Error("lstm_lm: tie_weights needs emb_dim == hidden_dim, got emb_dim " + std::to_string(config.emb_dim) +
                     " and hidden_dim " + std::to_string(config.hidden_dim));
  return config;
}

}  // namespace gradsweep::models::lstm_lm
