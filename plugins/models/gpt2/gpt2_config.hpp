#pragma once
// GPT-2's hyperparameters: the option schema, the named presets, and how the two combine.
//
// A preset fixes every size; any size the user also gives overrides the preset's. Without a preset every
// size must be given. The resolved config is validated here, before a single tensor is allocated, so a
// bad experiment fails with a sentence naming the option rather than with a LibTorch shape error.
#include "causal_attention.hpp"   // plugins/models/common
#include "padded_vocabulary.hpp"  // plugins/models/common

#include <gradsweep/sdk/options.hpp>

#include <array>
#include <cstdint>
#include <string>

namespace gradsweep::models::gpt2 {

using models::AttentionKernel;

struct Gpt2Config {
  std::int64_t n_layer = 0;
  std::int64_t n_head = 0;
  std::int64_t n_embd = 0;
  std::int64_t block_size = 0;  // longest sequence; the size of the position table
  std::int64_t vocab_size = 0;
  double dropout = 0.0;  // embeddings, attention weights, residual branches
  AttentionKernel attention = AttentionKernel::Fused;
  // wte's rows are vocab_size rounded up to a multiple of this (1: none). The output projection is then
  // a GEMM whose width tensor cores tile evenly (50257 -> 50304, as llm.c and nanoGPT pad); the extra
  // rows start at zero, their logits are masked out of the softmax, so they never train and the loss is
  // the unpadded model's.
  std::int64_t vocab_multiple = 128;

  std::int64_t padded_vocab() const { return padded_rows(vocab_size, vocab_multiple); }
};

inline constexpr std::array<sdk::OptionSpec, 9> kGpt2Options{{
    {"preset", sdk::OptionType::String, nullptr,
     "named size: gpt2-124m, gpt2-bai-100m, gpt2-small-cpu, gpt2-tiny (the sizes below override it)"},
    {"n_layer", sdk::OptionType::Int, nullptr, "number of transformer blocks (default: the preset's)"},
    {"n_head", sdk::OptionType::Int, nullptr, "attention heads per block; must divide n_embd (default: the preset's)"},
    {"n_embd", sdk::OptionType::Int, nullptr, "width of the residual stream (default: the preset's)"},
    {"block_size", sdk::OptionType::Int, nullptr,
     "longest sequence, size of the position table (default: the preset's)"},
    {"vocab_size", sdk::OptionType::Int, nullptr, "number of token ids (default: the preset's)"},
    {"dropout", sdk::OptionType::Float, "0.0", "dropout probability on embeddings, attention and residual branches"},
    {"attention", sdk::OptionType::String, "fused",
     "fused (scaled_dot_product_attention) or explicit (matmul, mask, softmax); training with dropout > 0 "
     "runs explicit, whose dropout is keyed by sample"},
    {"vocab_multiple", sdk::OptionType::Int, "128", kVocabMultipleHelp},
}};

// The preset (if any) with the user's sizes applied, validated.
Gpt2Config resolve_config(const sdk::Options& options);

}  // namespace gradsweep::models::gpt2
