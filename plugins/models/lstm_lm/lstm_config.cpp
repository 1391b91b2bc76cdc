#include "lstm_config.hpp"

#include <gradsweep/sdk/status.hpp>

#include <utility>
#include <vector>

namespace gradsweep::models::lstm_lm {
namespace {

struct NamedPreset {
  const char* name;
  LstmConfig config;
};

// docs/models.md lists these with their exact parameter counts; change both together.
const std::vector<NamedPreset>& presets() {
  static const std::vector<NamedPreset> table{
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

void require_positive(std::int64_t value, const char* key) {
  if (value <= 0) throw sdk::Error("lstm_lm: " + std::string(key) + " must be positive, got " + std::to_string(value));
}

}  // namespace

std::string preset_names() {
  std::string names;
  for (const auto& p : presets()) names += (names.empty() ? "" : ", ") + std::string(p.name);
  return names;
}

LstmConfig preset(const std::string& name) {
  for (const auto& p : presets())
    if (name == p.name) return p.config;
  throw sdk::Error("lstm_lm: unknown preset '" + name + "'; known presets: " + preset_names());
}

LstmConfig resolve_config(const sdk::Options& options) {
  const bool has_preset = options.has("preset");
  LstmConfig config = has_preset ? preset(options.text("preset")) : LstmConfig{};

  const std::pair<const char*, std::int64_t*> sizes[] = {
      {"vocab_size", &config.vocab_size},
      {"emb_dim", &config.emb_dim},
      {"hidden_dim", &config.hidden_dim},
      {"n_layer", &config.n_layer},
  };
  for (const auto& [key, field] : sizes) {
    if (options.has(key)) {
      *field = options.integer(key);
    } else if (!has_preset) {
      throw sdk::Error(std::string("lstm_lm: option '") + key + "' is not set and no preset was given; set 'preset' (" +
                       preset_names() + ") or all of vocab_size, emb_dim, hidden_dim, n_layer");
    }
    require_positive(*field, key);
  }
  config.dropout = options.number_or("dropout", 0.0);
  if (options.has("tie_weights")) config.tie_weights = options.flag("tie_weights");

  if (config.dropout < 0.0 || config.dropout >= 1.0)
    throw sdk::Error("lstm_lm: dropout must be in [0, 1), got " + std::to_string(config.dropout));
  // Tying reuses the (V,E) embedding as the (V,H) output matrix, so the two widths must agree. We refuse
  // rather than insert a hidden H->E projection: that would be a different model under the same name.
  if (config.tie_weights && config.emb_dim != config.hidden_dim)
    throw sdk::Error("lstm_lm: tie_weights needs emb_dim == hidden_dim, got emb_dim " + std::to_string(config.emb_dim) +
                     " and hidden_dim " + std::to_string(config.hidden_dim));
  return config;
}

}  // namespace gradsweep::models::lstm_lm
