#pragma once
// Deep Gradient Compression's sparsifier (Lin, Han, Mao, Wang and Dally, ICLR 2018), per tensor:
//
//   u = momentum * u + g          momentum correction: the local velocity, not the raw gradient, is
//   v = v + u                     accumulated (v is the error feedback: what was not sent yet)
//   send the k_i largest |v| of each tensor i, k_i = ceil(numel_i * ratio / 100), as values + indices
//   v, u = 0 where sent           momentum factor masking: a sent coordinate's stale velocity is dropped
//
// Per tensor rather than over the flat gradient, as the paper's thresholds are per layer: one global
// threshold would be set by the tensors with the largest gradients (the embeddings) and leave small ones
// (layer-norm gains) waiting for many steps. Each k_i depends only on the shapes, so every rank sends the
// same count and the allgather's sizes match. The selection is exact (torch::topk), not the paper's
// sampled threshold estimate.
//
// Local, so it can be tested without MPI: the strategy allgathers what select() returns and densify()
// sums every rank's part.
#include "flat_layout.hpp"

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace gradsweep::strategies {

class DgcCompressor {
 public:
  // `params` gives the shapes, dtype and device; the flat gradient follows their order (FlatLayout).
  DgcCompressor(const std::vector<torch::Tensor>& params, double ratio_percent, double momentum);

  // Elements tensor i sends per step, and all tensors together (K).
  static std::int64_t kept(std::int64_t numel, double ratio_percent);
  std::int64_t selected() const { return selected_; }
  const FlatLayout& layout() const { return layout_; }

  // Momentum correction and accumulation of this rank's gradient `flat`, then the selection: `values`
  // (K, float) and `indices` (K, int32, into the flat gradient) are filled, and the sent entries of v
  // and u zeroed.
  void select(const torch::Tensor& flat, torch::Tensor& values, torch::Tensor& indices);
  // A dense step (DGC's warm-up): u = momentum * u + g, written back into `flat` to be sent whole; v is
  // left alone and u is not masked, so dense steps are momentum SGD.
  void correct_dense(torch::Tensor& flat);

  // flat = the sum over ranks of the gathered parts (`values`, `indices`: `ranks` blocks of K each).
  // Added block by block in rank order: no index repeats within a block, so the result does not depend
  // on how the device orders its atomic adds, and every rank computes the same bits.
  static void densify(const torch::Tensor& values, const torch::Tensor& indices, int ranks, torch::Tensor& flat);

  const torch::Tensor& velocity() const { return velocity_; }          // u
  const torch::Tensor& accumulation() const { return accumulation_; }  // v

  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);
  // The state of a job of another number of ranks (one archive per old rank): velocity and accumulation
  // become the means of the old ranks'. The ranks' sent parts are averaged, so what their pending error
  // feedback and momentum add to later steps is (1/N) * the sum over ranks, which the mean keeps at any new
  // N; rank 0's alone, or zeros, would change it.
  void load_resharded(const std::vector<torch::serialize::InputArchive*>& saved);

 private:
  FlatLayout layout_;
  std::vector<std::int64_t> kept_, value_offset_;
  std::int64_t selected_ = 0;
  double momentum_;
  torch::Tensor velocity_, accumulation_;
};

}  // namespace gradsweep::strategies
