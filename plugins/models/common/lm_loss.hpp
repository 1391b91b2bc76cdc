#pragma once
// Next-token cross-entropy through an output matrix, over the whole vocabulary or a sampled part of it.
//
// Shared by the model plugins (header-only: compiled into each plugin, which stays self-contained).
#include <gradsweep/sdk/model.hpp>
#include <gradsweep/sdk/status.hpp>

#include <torch/nn/functional/linear.h>
#include <torch/nn/functional/loss.h>
#include <torch/types.h>

#include <cstdint>
#include <limits>
#include <string>

namespace gradsweep::models {

// Throws unless the batch is two (B,T) int64 tensors of equal shape with T <= block_size (0: no limit).
inline void check_batch(const sdk::Batch& batch, std::int64_t block_size, const std::string& model) {
  const auto& x = batch.inputs;
  const auto& y = batch.targets;
  if (!x.defined() || !y.defined() || x.dim() != 2 || x.sizes() != y.sizes())
    throw sdk::Error(model + ": inputs and targets must both be (B,T)");
  if (x.scalar_type() != torch::kLong || y.scalar_type() != torch::kLong)
    throw sdk::Error(model + ": inputs and targets must be int64 token ids");
  if (block_size > 0 && x.size(1) > block_size)
    throw sdk::Error(model + ": sequence length " + std::to_string(x.size(1)) + " exceeds block_size " +
                     std::to_string(block_size));
}

// hidden is (B,T,C); weight (V,C); bias (V,) or undefined. Returns the mean over the B*T positions of
// -log softmax(logits)[target], a 0-dim float32 tensor. Targets equal to -100 are skipped (PyTorch's
// ignore_index) and the mean is then over the others.
//
// With `subset`, logits exist only for subset->rows: weight (and bias) rows are gathered first, so the
// (B,T,V) logits are never formed and only the gathered rows receive a gradient. log_q, when defined,
// is subtracted from every position's logits (the sampled-softmax correction), and the targets are
// subset->targets, which index into rows.
//
// `vocab_size` below weight's rows says that rows vocab_size.. are padding (a GEMM width tensor cores
// tile evenly): their logits are set to -inf, so the softmax, the loss and every real gradient are the
// unpadded model's, and the padding rows receive no gradient. A subset names real rows only.
// The (B,T,vocab_size) float32 logits of hidden (B,T,C) through weight (V,C) and bias, without the
// padding rows beyond vocab_size (all rows when vocab_size < 0).
inline torch::Tensor lm_head_logits(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& bias,
                                    std::int64_t vocab_size = -1) {
  const std::int64_t rows = vocab_size >= 0 ? vocab_size : weight.size(0);
  const torch::Tensor b = bias.defined() ? bias.narrow(0, 0, rows) : bias;
  return torch::nn::functional::linear(hidden, weight.narrow(0, 0, rows), b).to(torch::kFloat);
}

inline torch::Tensor lm_head_loss(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& bias,
                                  const sdk::Batch& batch, const sdk::OutputSubset* subset,
                                  std::int64_t vocab_size = -1) {
  namespace F = torch::nn::functional;
  torch::Tensor w = weight;
  torch::Tensor b = bias;
  torch::Tensor targets = batch.targets;
  if (subset != nullptr) {
    const auto& rows = subset->rows;
    if (!rows.defined() || rows.dim() != 1 || rows.scalar_type() != torch::kLong)
      throw sdk::Error("output subset: rows must be a 1-D int64 tensor of vocabulary ids");
    if (!subset->targets.defined() || subset->targets.sizes() != batch.targets.sizes())
      throw sdk::Error("output subset: targets must have the batch's (B,T) shape");
    if (subset->log_q.defined() && (subset->log_q.dim() != 1 || subset->log_q.size(0) != rows.size(0)))
      throw sdk::Error("output subset: log_q must be (S,) like rows");
    w = weight.index_select(0, rows);  // (S,C)
    if (b.defined()) b = b.index_select(0, rows);
    targets = subset->targets;
  }
  // Under autocast the projection runs in bf16/fp16; the softmax over thousands of classes is taken in
  // float32, where its log-sum-exp does not lose the small differences that carry the gradient.
  auto logits = F::linear(hidden, w, b).to(torch::kFloat);  // (B,T,V) or (B,T,S)
  if (subset != nullptr && subset->log_q.defined()) logits = logits - subset->log_q.to(logits.options());
  const std::int64_t rows = logits.size(-1);
  // In place: the projection's backward does not read its output, and a masked copy would be one more
  // (B,T,V) float tensor at the step's memory peak.
  if (subset == nullptr && vocab_size >= 0 && vocab_size < rows)
    logits.narrow(-1, vocab_size, rows - vocab_size).fill_(-std::numeric_limits<float>::infinity());
  return F::cross_entropy(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}));
}

}  // namespace gradsweep::models
