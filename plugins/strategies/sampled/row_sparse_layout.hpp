#pragma once
// One flat buffer of a step's gradient (or parameters) where row-sparse parameters (embedding and
// output matrices, sdk::Parameter::row_sparse) contribute only the rows of a given id set and every
// other parameter contributes all of itself.
//
// Under a sampled softmax the rows outside the set have exactly zero gradient, so packing, summing
// over ranks and unpacking gives the same gradient as a dense exchange, at a fraction of the bytes.
// Every rank must use the same `rows` (ascending, distinct ids), which the strategy derives from the
// global batch.
#include <gradsweep/sdk/model.hpp>

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace gradsweep::strategies {

class RowSparseLayout {
 public:
  RowSparseLayout() = default;
  explicit RowSparseLayout(const std::vector<sdk::Parameter>& params);

  // Elements the buffer holds for `row_count` rows, and for all rows (the dense equivalent).
  std::int64_t numel(std::int64_t row_count) const { return dense_elements_ + row_count * row_elements_; }
  std::int64_t dense_numel() const { return total_elements_; }
  bool has_sparse() const { return row_elements_ > 0; }

  // flat (sized numel(rows.numel())) = the gradients' rows / whole tensors, cast to flat's dtype.
  void pack_gradients(const std::vector<torch::Tensor>& params, const torch::Tensor& rows, torch::Tensor& flat) const;
  // Each gradient = zeros except the packed rows (times scale); creates missing gradients.
  void unpack_gradients(const torch::Tensor& flat, const torch::Tensor& rows, double scale,
                        const std::vector<torch::Tensor>& params) const;
  void pack_parameters(const std::vector<torch::Tensor>& params, const torch::Tensor& rows, torch::Tensor& flat) const;
  // Writes the packed rows / whole tensors into the parameters; other rows keep their values.
  void unpack_parameters(const torch::Tensor& flat, const torch::Tensor& rows,
                         const std::vector<torch::Tensor>& params) const;

 private:
  // Calls f(i, view) for every parameter i, where view is i's part of flat shaped like the parameter
  // (or like its `row_count` rows).
  template <class F>
  void for_each(const torch::Tensor& flat, std::int64_t row_count, const std::vector<torch::Tensor>& params,
                F&& f) const;

  std::vector<bool> sparse_;
  std::vector<std::int64_t> row_width_;  // elements per row of each row-sparse parameter
  std::int64_t dense_elements_ = 0, row_elements_ = 0, total_elements_ = 0;
};

}  // namespace gradsweep::strategies
