#pragma once
// Token matrices with their rows padded to a multiple (the model option `vocab_multiple`), shared by the
// model plugins (header-only).
//
// Padding makes the output projection a GEMM whose width tensor cores tile evenly (GPT-2's 50257 ids in
// 50304 rows, as llm.c and nanoGPT pad). The padding rows start at zero and take no random draw, so a
// padded model starts where the unpadded one does; lm_loss.hpp masks their logits, so they never train
// and the loss is the unpadded model's.
#include <gradsweep/sdk/options.hpp>
#include <gradsweep/sdk/status.hpp>

#include <torch/nn/modules/embedding.h>
#include <torch/types.h>

#include <cstdint>
#include <string>

namespace gradsweep::models {

inline constexpr const char* kVocabMultipleHelp =
    "the token matrices' rows are vocab_size rounded up to a multiple of this (1: none); the extra logits are "
    "masked, so the loss is unchanged";

inline std::int64_t resolve_vocab_multiple(const sdk::Options& options, const std::string& model) {
  const std::int64_t multiple = options.integer("vocab_multiple");
  if (multiple < 1)
    throw sdk::Error(model + ": vocab_multiple must be at least 1 (1: no padding), got " + std::to_string(multiple));
  return multiple;
}

inline std::int64_t padded_rows(std::int64_t vocab_size, std::int64_t multiple) {
  return (vocab_size + multiple - 1) / multiple * multiple;
}

// An embedding of `rows` x `width` over uninitialised memory: Embedding's own N(0,1) draw would take as
// many numbers as it has rows, so padding would shift every later draw (init_token_rows draws the rows).
inline torch::nn::Embedding token_embedding(std::int64_t rows, std::int64_t width) {
  return torch::nn::Embedding(torch::nn::EmbeddingOptions(rows, width)._weight(torch::empty({rows, width})));
}

// Rows [0, vocab_size) ~ N(0, std), the padding rows zero. Call under NoGradGuard.
inline void init_token_rows(torch::Tensor& matrix, std::int64_t vocab_size, double std_dev) {
  matrix.narrow(0, 0, vocab_size).normal_(0.0, std_dev);
  matrix.narrow(0, vocab_size, matrix.size(0) - vocab_size).zero_();
}

}  // namespace gradsweep::models
