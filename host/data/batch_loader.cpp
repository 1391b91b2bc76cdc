#include "data/batch_loader.hpp"

#include <stdexcept>
#include <string>

namespace gradsweep::data {
namespace {

void require_positive(const char* name, int64_t value) {
  if (value <= 0) {
    throw std::invalid_argument(std::string("batch loader: ") + name + " must be positive, got " +
                                std::to_string(value));
  }
}

// a * b, refused when it does not fit int64: a wrapped product (2^58 sequences x 64 tokens = 0) would
// divide by zero or address the wrong tokens.
int64_t checked_product(const char* what, int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product))
    throw std::invalid_argument(std::string("batch loader: ") + what + " = " + std::to_string(a) + " x " +
                                std::to_string(b) + " does not fit in 64 bits");
  return product;
}

}  // namespace

BatchLoader::BatchLoader(TokenSplit split, const BatchLoaderOptions& options)
    : split_(std::move(split)), options_(options) {
  const auto& o = options_;
  require_positive("global batch size", o.global_batch);
  require_positive("sequence length", o.seq_len);
  require_positive("micro-batch size", o.micro_batch);
  require_positive("world size", o.world_size);
  if (o.rank < 0 || o.rank >= o.world_size) {
    throw std::invalid_argument("batch loader: rank " + std::to_string(o.rank) + " is outside [0, " +
                                std::to_string(o.world_size) + ")");
  }
  // Every product the loader forms later, checked once here.
  checked_product("tokens per global batch", o.global_batch, o.seq_len);
  checked_product("tokens per micro-batch", o.micro_batch, o.seq_len);
  checked_product("micro-batch size x ranks", o.micro_batch, o.world_size);
  if (o.global_batch % (o.micro_batch * o.world_size) != 0) {
    throw std::invalid_argument("batch loader: global batch size " + std::to_string(o.global_batch) +
                                " is not a multiple of micro-batch size x ranks = " + std::to_string(o.micro_batch) +
                                " x " + std::to_string(o.world_size) + " = " +
                                std::to_string(o.micro_batch * o.world_size) +
                                ": every rank must run the same whole number of micro-batches per step");
  }
  micro_batches_per_step_ = o.global_batch / (o.micro_batch * o.world_size);
  if (num_eval_batches() == 0) {
    throw std::runtime_error(split_.describe() + ": too small for one batch of " + std::to_string(o.micro_batch) +
                             " x " + std::to_string(o.seq_len) + " tokens: needs " +
                             std::to_string(o.micro_batch * o.seq_len + 1) + " tokens, has " +
                             std::to_string(split_.size()));
  }
}

// The "-1": the last sequence's targets reach one token past its inputs.
int64_t BatchLoader::num_batches() const {
  return split_.size() > 0 ? (split_.size() - 1) / (options_.global_batch * options_.seq_len) : 0;
}

int64_t BatchLoader::num_eval_batches() const {
  return split_.size() > 0 ? (split_.size() - 1) / (options_.micro_batch * options_.seq_len) : 0;
}

Batch BatchLoader::batch(int64_t step, int64_t micro) const {
  const auto& o = options_;
  if (step < 0) throw std::out_of_range("batch loader: negative step " + std::to_string(step));
  if (micro < 0 || micro >= micro_batches_per_step_) {
    throw std::out_of_range("batch loader: micro-batch " + std::to_string(micro) + " is outside [0, " +
                            std::to_string(micro_batches_per_step_) + ")");
  }
  const int64_t batches = num_batches();
  if (batches == 0) {
    throw std::runtime_error(split_.describe() + ": too small for one global batch of " +
                             std::to_string(o.global_batch) + " x " + std::to_string(o.seq_len) + " tokens: needs " +
                             std::to_string(o.global_batch * o.seq_len + 1) + " tokens, has " +
                             std::to_string(split_.size()) +
                             " (use more data, or a smaller global batch or sequence length)");
  }
  // Only the step picks the position: no loader state, so a resumed run continues exactly where the
  // checkpointed one stopped, and every rank agrees on the global batch without communicating.
  const int64_t global_start = (step % batches) * o.global_batch * o.seq_len;
  const int64_t sequences_per_rank = o.global_batch / o.world_size;
  const int64_t first_sequence = o.rank * sequences_per_rank + micro * o.micro_batch;
  return slice(global_start + first_sequence * o.seq_len);
}

Batch BatchLoader::eval_batch(int64_t i) const {
  if (i < 0) throw std::out_of_range("batch loader: negative evaluation batch " + std::to_string(i));
  const int64_t tokens_per_batch = options_.micro_batch * options_.seq_len;
  return slice((i % num_eval_batches()) * tokens_per_batch);
}

Batch BatchLoader::slice(int64_t first_token) const {
  const int64_t rows = options_.micro_batch;
  const int64_t cols = options_.seq_len;
  // One contiguous run of M*T+1 tokens: inputs are [0, M*T), targets [1, M*T+1).
  torch::Tensor inputs = torch::empty({rows, cols}, torch::kInt64);
  torch::Tensor targets = torch::empty({rows, cols}, torch::kInt64);
  // The run may cross from one shard into the next: the split copies it piecewise.
  split_.copy_tokens(first_token, rows * cols, inputs.data_ptr<int64_t>());
  split_.copy_tokens(first_token + 1, rows * cols, targets.data_ptr<int64_t>());
  return Batch{inputs, targets};
}

}  // namespace gradsweep::data
