#include "train/output_vocabulary.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace gradsweep::train {

namespace {

// Ids of either width are widened once into int64; bincount is a single pass.
template <class Tokens>
torch::Tensor count_first_tokens(const Tokens& tokens, std::int64_t vocab_size, std::int64_t limit) {
  const std::int64_t n = std::min(static_cast<std::int64_t>(tokens.size()), limit);
  torch::Tensor ids = torch::empty({n}, torch::kLong);
  tokens.copy_tokens(0, n, ids.data_ptr<std::int64_t>());
  return torch::bincount(ids, /*weights=*/{}, vocab_size).narrow(0, 0, vocab_size).contiguous();
}

}  // namespace

torch::Tensor count_tokens(const data::TokenSplit& split, std::int64_t vocab_size, std::int64_t limit) {
  return count_first_tokens(split, vocab_size, limit);
}

torch::Tensor count_tokens(const data::TokenShard& shard, std::int64_t vocab_size, std::int64_t limit) {
  return count_first_tokens(shard, vocab_size, limit);
}

sdk::OutputSubset restrict_targets(const sdk::OutputVocabulary& vocabulary, const torch::Tensor& targets,
                                   std::int64_t vocab_size, std::int64_t step) {
  const std::string where = "step " + std::to_string(step) + ": the strategy's output vocabulary ";
  const torch::Tensor& rows = vocabulary.rows;
  if (rows.dim() != 1 || rows.scalar_type() != torch::kLong)
    throw std::runtime_error(where + "must be a 1-D int64 tensor of token ids");
  const torch::Tensor cpu_rows = rows.cpu();
  if (cpu_rows.numel() > 0 &&
      (cpu_rows.min().item<std::int64_t>() < 0 || cpu_rows.max().item<std::int64_t>() >= vocab_size))
    throw std::runtime_error(where + "holds an id outside [0, " + std::to_string(vocab_size) + ")");
  // position[id] = index of id in rows, or -1.
  torch::Tensor position = torch::full({vocab_size}, -1, torch::kLong);
  position.index_put_({cpu_rows}, torch::arange(cpu_rows.numel(), torch::kLong));
  if ((position >= 0).sum().item<std::int64_t>() != cpu_rows.numel())
    throw std::runtime_error(where + "lists an id twice");
  const torch::Tensor cpu_targets = targets.cpu();
  const torch::Tensor local = position.index({cpu_targets});
  const torch::Tensor missing = (local.flatten() < 0).nonzero();
  if (missing.numel() > 0) {
    const auto id = cpu_targets.flatten()[missing[0][0]].item<std::int64_t>();
    throw std::runtime_error(where + "lacks target id " + std::to_string(id) + " (it must contain every target)");
  }
  sdk::OutputSubset subset;
  subset.rows = rows;
  subset.targets = local.to(targets.device());
  if (vocabulary.log_q.defined()) subset.log_q = vocabulary.log_q.to(rows.device());
  return subset;
}

}  // namespace gradsweep::train
