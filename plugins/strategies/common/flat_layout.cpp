#include "flat_layout.hpp"

#include <torch/torch.h>

namespace gradsweep::strategies {

FlatLayout::FlatLayout(const std::vector<torch::Tensor>& params) {
  for (const auto& p : params) {
    offsets_.push_back(total_);
    sizes_.push_back(p.numel());
    total_ += p.numel();
  }
}

void FlatLayout::pack_gradient(const torch::Tensor& param, std::size_t i, torch::Tensor& flat) const {
  torch::Tensor out = slice(flat, i);
  const torch::Tensor& grad = param.grad();
  if (grad.defined())
    out.copy_(grad.reshape({-1}));
  else
    out.zero_();
}

void FlatLayout::pack_gradients(const std::vector<torch::Tensor>& params, torch::Tensor& flat) const {
  for (std::size_t i = 0; i < params.size(); ++i) pack_gradient(params[i], i, flat);
}

void FlatLayout::unpack_gradients(const torch::Tensor& flat, double scale,
                                  const std::vector<torch::Tensor>& params) const {
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const torch::Tensor& p = params[i];
    torch::Tensor src = slice(flat, i).view(p.sizes());
    torch::Tensor& grad = const_cast<torch::Tensor&>(p).mutable_grad();
    if (!grad.defined()) grad = torch::empty_like(p);
    grad.copy_(src);
    if (scale != 1.0) grad.mul_(scale);
  }
}

void FlatLayout::pack_parameters(const std::vector<torch::Tensor>& params, torch::Tensor& flat) const {
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < params.size(); ++i) slice(flat, i).copy_(params[i].detach().reshape({-1}));
}

void FlatLayout::unpack_parameters(const torch::Tensor& flat, const std::vector<torch::Tensor>& params) const {
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < params.size(); ++i) params[i].detach().copy_(slice(flat, i).view(params[i].sizes()));
}

}  // namespace gradsweep::strategies
