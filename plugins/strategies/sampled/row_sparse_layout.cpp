#include "row_sparse_layout.hpp"

#include <gradsweep/sdk/status.hpp>

#include <torch/torch.h>

#include <string>

namespace gradsweep::strategies {

RowSparseLayout::RowSparseLayout(const std::vector<sdk::Parameter>& params) {
  for (const auto& p : params) {
    const bool sparse = p.row_sparse && p.tensor.dim() >= 1 && p.tensor.size(0) > 0;
    sparse_.push_back(sparse);
    row_width_.push_back(sparse ? p.tensor.numel() / p.tensor.size(0) : 0);
    if (sparse)
      row_elements_ += row_width_.back();
    else
      dense_elements_ += p.tensor.numel();
    total_elements_ += p.tensor.numel();
  }
}

template <class F>
void RowSparseLayout::for_each(const torch::Tensor& flat, std::int64_t row_count,
                               const std::vector<torch::Tensor>& params, F&& f) const {
  if (flat.numel() != numel(row_count) || params.size() != sparse_.size())
    throw sdk::Error("row-sparse buffer holds " + std::to_string(flat.numel()) + " elements for " +
                     std::to_string(params.size()) + " parameters; " + std::to_string(numel(row_count)) + " for " +
                     std::to_string(sparse_.size()) + " expected");
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < sparse_.size(); ++i) {
    auto shape = params[i].sizes().vec();
    if (sparse_[i]) shape[0] = row_count;
    const std::int64_t n = sparse_[i] ? row_count * row_width_[i] : params[i].numel();
    f(i, flat.narrow(0, offset, n).view(shape));
    offset += n;
  }
}

void RowSparseLayout::pack_gradients(const std::vector<torch::Tensor>& params, const torch::Tensor& rows,
                                     torch::Tensor& flat) const {
  torch::NoGradGuard no_grad;
  for_each(flat, rows.numel(), params, [&](std::size_t i, torch::Tensor view) {
    const torch::Tensor& grad = params[i].grad();
    if (!grad.defined())
      view.zero_();
    else if (sparse_[i])
      view.copy_(grad.index_select(0, rows));
    else
      view.copy_(grad);
  });
}

void RowSparseLayout::unpack_gradients(const torch::Tensor& flat, const torch::Tensor& rows, double scale,
                                       const std::vector<torch::Tensor>& params) const {
  torch::NoGradGuard no_grad;
  for_each(flat, rows.numel(), params, [&](std::size_t i, const torch::Tensor& view) {
    torch::Tensor p = params[i];
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    torch::Tensor grad = p.grad();
    if (sparse_[i]) {
      grad.zero_();
      grad.index_copy_(0, rows, view.to(grad.dtype()).mul(scale));
    } else {
      grad.copy_(view.mul(scale));
    }
  });
}

void RowSparseLayout::pack_parameters(const std::vector<torch::Tensor>& params, const torch::Tensor& rows,
                                      torch::Tensor& flat) const {
  torch::NoGradGuard no_grad;
  for_each(flat, rows.numel(), params, [&](std::size_t i, torch::Tensor view) {
    view.copy_(sparse_[i] ? params[i].index_select(0, rows) : params[i]);
  });
}

void RowSparseLayout::unpack_parameters(const torch::Tensor& flat, const torch::Tensor& rows,
                                        const std::vector<torch::Tensor>& params) const {
  torch::NoGradGuard no_grad;
  for_each(flat, rows.numel(), params, [&](std::size_t i, const torch::Tensor& view) {
    torch::Tensor p = params[i];
    if (sparse_[i])
      p.index_copy_(0, rows, view.to(p.dtype()));
    else
      p.copy_(view);
  });
}

}  // namespace gradsweep::strategies
