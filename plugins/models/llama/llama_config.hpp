#pragma once
// Llama's hyperparameters (the architecture of Llama 2 and 3, Mistral, Qwen 2): the option schema, the
// named presets, and how the two combine. As for gpt2, a preset fixes every size and any size the user
// gives overrides it; the resolved config is validated before a tensor is allocated.
#include "causal_attention.hpp"   // plugins/models/common
#include "padded_vocabulary.hpp"  // plugins/models/common

#include <gradsweep/sdk/options.hpp>

#include <array>
#include <cstdint>

namespace gradsweep::models::llama {

struct LlamaConfig {
  std::int64_t n_layer = 0;
  std::int64_t n_head = 0;
  std::int64_t n_kv_head = 0;  // key/value heads; divides n_head (grouped-query attention)
  std::int64_t n_embd = 0;
  std::int64_t intermediate_size = 0;  // the SwiGLU MLP's hidden width
  std::int64_t block_size = 0;         // longest sequence: the rotary tables' length
  std::int64_t vocab_size = 0;
  double rope_theta = 10000.0;
  double norm_eps = 1e-5;
  bool tie_embeddings = false;  // the output head is the token embedding (Llama 3.2 1B/3B) or its own matrix
  double dropout = 0.0;         // embeddings, attention weights, residual branches
  AttentionKernel attention = AttentionKernel::Fused;
  std::int64_t vocab_multiple = 128;

  std::int64_t head_size() const { return n_embd / n_head; }
  std::int64_t padded_vocab() const { return padded_rows(vocab_size, vocab_multiple); }
};

inline constexpr std::array<sdk::OptionSpec, 14> kLlamaOptions{{
    {"preset", sdk::OptionType::String, nullptr,
     "named size: llama-1b, llama-125m, llama-small-cpu, llama-tiny (the sizes below override it)"},
    {"n_layer", sdk::OptionType::Int, nullptr, "number of transformer blocks (default: the preset's)"},
    {"n_head", sdk::OptionType::Int, nullptr, "query heads; must divide n_embd (default: the preset's)"},
    {"n_kv_head", sdk::OptionType::Int, nullptr,
     "key/value heads, dividing n_head: n_head is multi-head attention, fewer is grouped-query (default: the "
     "preset's)"},
    {"n_embd", sdk::OptionType::Int, nullptr, "width of the residual stream (default: the preset's)"},
    {"intermediate_size", sdk::OptionType::Int, nullptr, "hidden width of the SwiGLU MLP (default: the preset's)"},
    {"block_size", sdk::OptionType::Int, nullptr, "longest sequence (default: the preset's)"},
    {"vocab_size", sdk::OptionType::Int, nullptr, "number of token ids (default: the preset's)"},
    {"rope_theta", sdk::OptionType::Float, nullptr,
     "base of the rotary embedding's frequencies (default: the preset's)"},
    {"norm_eps", sdk::OptionType::Float, "1e-5", "RMSNorm's epsilon"},
    {"tie_embeddings", sdk::OptionType::Bool, nullptr,
     "the output head is the token embedding rather than a matrix of its own (default: the preset's)"},
    {"dropout", sdk::OptionType::Float, "0.0", "dropout probability on embeddings, attention and residual branches"},
    {"attention", sdk::OptionType::String, "fused",
     "fused (scaled_dot_product_attention) or explicit (matmul, mask, softmax); training with dropout > 0 "
     "runs explicit, whose dropout is keyed by sample"},
    {"vocab_multiple", sdk::OptionType::Int, "128", kVocabMultipleHelp},
}};

// The preset (if any) with the user's sizes applied, validated.
LlamaConfig resolve_config(const sdk::Options& options);

}  // namespace gradsweep::models::llama
