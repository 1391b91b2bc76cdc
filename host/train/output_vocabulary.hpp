#pragma once
// Plumbing for strategies that restrict the training softmax to some vocabulary rows (SDK 1.2,
// Strategy::output_vocabulary): the training shard's token counts they sample from, and the
// re-indexing of each micro-batch's targets into the rows they chose. What to sample is theirs.
#include "data/token_split.hpp"

#include <gradsweep/sdk/model.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include <torch/types.h>

#include <cstdint>

namespace gradsweep::train {

// How often each id in [0, vocab_size) occurs in the split's first `limit` tokens (all of a small
// split): (vocab_size,) int64. Every run of a 1.2 strategy pays for it at start-up, so a multi-GB split
// is sampled by its first 2^27 tokens, plenty for a unigram distribution, in well under a second.
inline constexpr std::int64_t kTokenCountLimit = std::int64_t{1} << 27;
torch::Tensor count_tokens(const data::TokenSplit& split, std::int64_t vocab_size,
                           std::int64_t limit = kTokenCountLimit);
torch::Tensor count_tokens(const data::TokenShard& shard, std::int64_t vocab_size,
                           std::int64_t limit = kTokenCountLimit);

// The model's OutputSubset for one micro-batch: `targets` (on any device) re-indexed into
// vocabulary.rows. Throws std::runtime_error naming the step and the first target the rows lack, or
// a row outside [0, vocab_size) or given twice.
sdk::OutputSubset restrict_targets(const sdk::OutputVocabulary& vocabulary, const torch::Tensor& targets,
                                   std::int64_t vocab_size, std::int64_t step);

}  // namespace gradsweep::train
