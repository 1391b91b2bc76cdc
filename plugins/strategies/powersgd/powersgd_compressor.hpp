#pragma once
// PowerSGD's rank-r compression of gradients with error feedback and warm start (Vogels, Karimireddy and
// Jaggi, NeurIPS 2019), laid out as PyTorch's powerSGD_hook does it: every matrix gradient M (a tensor of
// dim >= 2 seen as shape[0] x the rest) is approximated by P Q^T, and only P and Q cross the network.
//
// The arithmetic is split into local phases around the two sums over ranks, so it can be checked
// without MPI (tests/strategies/compression_parts_test.cpp sums the buffers of several instances by hand)
// and the strategy alone decides how the sums travel:
//
//   prepare(flat)          M += error; Q orthogonalised (random on the first call); P = M Q; the
//                          uncompressed tensors copied into dense()
//   -- p() and dense() summed over ranks --
//   after_p_sum(flat)      P orthogonalised; Q = M^T P
//   -- q() summed over ranks --
//   finish(flat, ranks)    Q /= ranks; flat = P Q^T for matrices, dense() / ranks for the rest;
//                          error = M - P Q^T (this rank's M, the previous error included)
//
// The error is kept for compressed matrices only: an uncompressed tensor is averaged exactly, so the
// hook's error there (this rank's gradient minus the mean) sums to zero over ranks and changes no update.
#include "flat_layout.hpp"

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace gradsweep::strategies {

struct PowerSgdSettings {
  std::int64_t rank = 2;               // r, the approximation's rank (capped at min(n, m) per matrix)
  std::int64_t min_compress_size = 0;  // matrices with fewer elements travel uncompressed
  std::uint64_t seed = 0;              // of the first Q, identical on every rank
};

class PowerSgdCompressor {
 public:
  // `params` gives the shapes, dtype and device; the flat gradient handed to the phases follows their
  // order (FlatLayout).
  PowerSgdCompressor(const std::vector<torch::Tensor>& params, const PowerSgdSettings& settings);

  void prepare(torch::Tensor& flat);
  void after_p_sum(const torch::Tensor& flat);
  void finish(torch::Tensor& flat, int ranks);

  // The buffers summed over ranks between the phases (P's and Q's each one flat buffer: one message each).
  torch::Tensor& p() { return p_; }
  torch::Tensor& q() { return q_; }
  torch::Tensor& dense() { return dense_; }

  // Whether parameter i is compressed; elements each step moves per buffer.
  bool compressed(std::size_t i) const { return matrix_of_[i] >= 0; }
  std::size_t compressed_count() const { return matrices_.size(); }
  std::int64_t p_numel() const { return p_.numel(); }
  std::int64_t q_numel() const { return q_.numel(); }
  std::int64_t dense_numel() const { return dense_.numel(); }
  const FlatLayout& layout() const { return layout_; }

  // The error feedback of the compressed matrices, one after the other (zeros before the first call).
  const torch::Tensor& error() const { return error_; }
  bool started() const { return started_; }

  // Q's and the error: what resuming needs to continue bit for bit.
  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);
  // The state of a job of another number of ranks (`saved`: one archive per old rank, rank 0 first): Q and
  // whether compression started from rank 0 (the same on every rank: Q is the averaged one); the error
  // feedback is the mean of the old ranks'. The next step's decompressed mean adds back (1/N) * the sum of
  // the residuals, which the mean keeps at any new N, where rank 0's alone (or zeros) would change it.
  void load_resharded(const std::vector<torch::serialize::InputArchive*>& saved);

 private:
  struct Matrix {
    std::size_t param;
    std::int64_t rows, cols, rank;
    std::int64_t p_offset, q_offset, error_offset;
  };

  torch::Tensor m_of(const torch::Tensor& flat, const Matrix& m) const;
  torch::Tensor p_of(const Matrix& m) { return p_.narrow(0, m.p_offset, m.rows * m.rank).view({m.rows, m.rank}); }
  torch::Tensor q_of(const Matrix& m) { return q_.narrow(0, m.q_offset, m.cols * m.rank).view({m.cols, m.rank}); }
  torch::Tensor error_of(const Matrix& m) { return error_.narrow(0, m.error_offset, m.rows * m.cols); }
  void initialise_q();

  PowerSgdSettings settings_;
  FlatLayout layout_;
  std::vector<Matrix> matrices_;
  std::vector<std::int64_t> matrix_of_;    // parameter -> index in matrices_, or -1
  std::vector<std::size_t> uncompressed_;  // parameters copied whole into dense_
  torch::Tensor p_, q_, dense_, error_;
  bool started_ = false;
};

// Gram-Schmidt on the columns of `m` (n x r, r small), in place. A column that is zero (a gradient that
// vanished) stays zero instead of becoming NaN.
void orthogonalise_columns(torch::Tensor m);

}  // namespace gradsweep::strategies
