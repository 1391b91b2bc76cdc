// Deterministic batches for data-parallel training from one split: one or more token shards read as one
// stream (token_split.hpp; see docs/data.md, "Batches").
//
// The global batch of step s is G consecutive sequences of T tokens starting at token (s mod num_batches)*G*T;
// targets are the inputs shifted by one token. Rank r of W owns sequences [r*G/W, (r+1)*G/W) of it, cut
// into micro-batches of M sequences. Consequences that the rest of gradsweep relies on:
//  - the union over ranks of a step's data is the same for any W, so a 1-rank and a 4-rank run of the same
//    config see the same tokens per optimizer step (strategies are compared on equal data);
//  - the position depends only on the step number, so resuming from a checkpoint needs only the step.
#pragma once

#include <torch/types.h>

#include <cstdint>

#include "data/token_split.hpp"

namespace gradsweep::data {

struct BatchLoaderOptions {
  int64_t global_batch = 0;  // G: sequences per optimizer step, summed over all ranks
  int64_t seq_len = 0;       // T: tokens per sequence
  int64_t micro_batch = 0;   // M: sequences per rank per forward/backward
  int64_t rank = 0;          // r in [0, world_size)
  int64_t world_size = 1;    // W
};

// M for `train.micro_batch`: the configured size, or 0 for the rank's whole share G / W. The planner and
// the trainer must agree on it, so this is the one place the rule is written.
inline int64_t micro_batch_size(int64_t configured, int64_t global_batch, int64_t ranks) {
  return configured > 0 ? configured : global_batch / ranks;
}

struct Batch {
  torch::Tensor inputs;   // (M, T) int64
  torch::Tensor targets;  // (M, T) int64: inputs shifted left by one token
};

class BatchLoader {
 public:
  // Throws std::invalid_argument if a size is not positive, rank is out of range, or G % (M*W) != 0;
  // std::runtime_error (naming the files) if the split is too small for one (M, T) evaluation batch.
  // A split too small for one global batch is reported by batch(), not here, so that a small validation
  // split can still serve eval_batch() with the training options.
  BatchLoader(TokenSplit split, const BatchLoaderOptions& options);

  const TokenSplit& split() const { return split_; }
  const BatchLoaderOptions& options() const { return options_; }

  // G / (M*W): forward/backward passes per rank per optimizer step (gradient accumulation).
  int64_t micro_batches_per_step() const { return micro_batches_per_step_; }
  // Distinct global batches in the split, (count-1) / (G*T); steps wrap around after this many (an epoch).
  int64_t num_batches() const;
  // Distinct (M, T) evaluation batches in the split, (count-1) / (M*T).
  int64_t num_eval_batches() const;

  // This rank's micro-batch `micro` (0 <= micro < micro_batches_per_step()) of step `step` (>= 0).
  // Throws std::runtime_error naming the files, the tokens needed and present if the split holds no global batch.
  Batch batch(int64_t step, int64_t micro) const;

  // The i-th (M, T) batch from the start of the split (i wraps around), the same on every rank: evaluate
  // the validation loss over a fixed number of these so that every run scores on identical tokens.
  Batch eval_batch(int64_t i) const;

 private:
  // M sequences of T tokens starting at `first_token`, each sequence T tokens after the previous.
  Batch slice(int64_t first_token) const;

  TokenSplit split_;
  BatchLoaderOptions options_;
  int64_t micro_batches_per_step_ = 0;
};

}  // namespace gradsweep::data
