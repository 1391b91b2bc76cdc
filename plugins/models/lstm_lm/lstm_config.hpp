#pragma once
// The LSTM language model's hyperparameters: option schema, named presets, and how the two combine
// (a preset fixes the sizes; any size the user also gives overrides it; without a preset all are needed).
#include <gradsweep/sdk/options.hpp>

#include <array>
#include <cstdint>
#include <string>

namespace gradsweep::models::lstm_lm {

struct LstmConfig {
  std::int64_t vocab_size = 0;
  std::int64_t emb_dim = 0;
  std::int64_t hidden_dim = 0;
  std::int64_t n_layer = 0;
  double dropout = 0.0;      // on the embeddings, between LSTM layers, and on the top layer's output
  bool tie_weights = false;  // output matrix = embedding matrix; needs emb_dim == hidden_dim
};

inline constexpr std::array<sdk::OptionSpec, 7> kLstmOptions{{
    {"preset", sdk::OptionType::String, nullptr,
     "named size: lstm-xiao2017, lstm-small-cpu, lstm-tiny (the sizes below override it)"},
    {"vocab_size", sdk::OptionType::Int, nullptr, "number of token ids (default: the preset's)"},
    {"emb_dim", sdk::OptionType::Int, nullptr, "width of the input embedding (default: the preset's)"},
    {"hidden_dim", sdk::OptionType::Int, nullptr, "LSTM hidden and cell width (default: the preset's)"},
    {"n_layer", sdk::OptionType::Int, nullptr, "stacked LSTM layers (default: the preset's)"},
    {"dropout", sdk::OptionType::Float, "0.0", "dropout on embeddings, between layers and before the softmax"},
    {"tie_weights", sdk::OptionType::Bool, "false",
     "use the embedding matrix as the output matrix (needs emb_dim == hidden_dim)"},
}};

// The preset (if any) with the user's options applied, validated.
LstmConfig resolve_config(const sdk::Options& options);

}  // namespace gradsweep::models::lstm_lm
