#include "dgc_compressor.hpp"

#include "saved_mean.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace gradsweep::strategies {

std::int64_t DgcCompressor::kept(std::int64_t numel, double ratio_percent) {
  const auto k = static_cast<std::int64_t>(std::ceil(static_cast<double>(numel) * ratio_percent / 100.0));
  return std::clamp<std::int64_t>(k, numel > 0 ? 1 : 0, numel);
}

DgcCompressor::DgcCompressor(const std::vector<torch::Tensor>& params, double ratio_percent, double momentum)
    : layout_(params), momentum_(momentum) {
  if (layout_.numel() > std::numeric_limits<std::int32_t>::max())
    throw std::invalid_argument("topk: " + std::to_string(layout_.numel()) +
                                " parameters do not fit the int32 indices sent on the wire");
  for (std::size_t i = 0; i < layout_.count(); ++i) {
    value_offset_.push_back(selected_);
    kept_.push_back(kept(layout_.numel(i), ratio_percent));
    selected_ += kept_.back();
  }
  const auto options = params.empty() ? torch::TensorOptions(torch::kFloat) : params.front().options();
  velocity_ = torch::zeros({layout_.numel()}, options);
  accumulation_ = torch::zeros({layout_.numel()}, options);
}

void DgcCompressor::select(const torch::Tensor& flat, torch::Tensor& values, torch::Tensor& indices) {
  torch::NoGradGuard no_grad;
  velocity_.mul_(momentum_).add_(flat);
  accumulation_.add_(velocity_);
  std::vector<torch::Tensor> chosen;
  chosen.reserve(layout_.count());
  for (std::size_t i = 0; i < layout_.count(); ++i) {
    const torch::Tensor v = layout_.slice(accumulation_, i);
    const torch::Tensor local = std::get<1>(torch::topk(v.abs(), kept_[i], 0, /*largest=*/true, /*sorted=*/false));
    values.narrow(0, value_offset_[i], kept_[i]).copy_(v.index_select(0, local));
    chosen.push_back(local + layout_.offset(i));
  }
  const torch::Tensor all = torch::cat(chosen);
  indices.copy_(all);
  accumulation_.index_fill_(0, all, 0.0);
  velocity_.index_fill_(0, all, 0.0);
}

void DgcCompressor::correct_dense(torch::Tensor& flat) {
  torch::NoGradGuard no_grad;
  velocity_.mul_(momentum_).add_(flat);
  flat.copy_(velocity_);
}

void DgcCompressor::densify(const torch::Tensor& values, const torch::Tensor& indices, int ranks, torch::Tensor& flat) {
  torch::NoGradGuard no_grad;
  flat.zero_();
  const std::int64_t k = values.numel() / ranks;
  const torch::Tensor positions = indices.to(torch::kLong);
  for (int r = 0; r < ranks; ++r) flat.index_add_(0, positions.narrow(0, r * k, k), values.narrow(0, r * k, k));
}

void DgcCompressor::save(torch::serialize::OutputArchive& archive) const {
  archive.write("topk/velocity", velocity_.cpu());
  archive.write("topk/accumulation", accumulation_.cpu());
}

void DgcCompressor::load(torch::serialize::InputArchive& archive) {
  torch::NoGradGuard no_grad;
  torch::Tensor velocity, accumulation;
  archive.read("topk/velocity", velocity);
  archive.read("topk/accumulation", accumulation);
  if (velocity.numel() != velocity_.numel() || accumulation.numel() != accumulation_.numel())
    throw std::runtime_error("topk: the checkpoint's velocity holds " + std::to_string(velocity.numel()) +
                             " elements but the model has " + std::to_string(velocity_.numel()));
  velocity_.copy_(velocity);
  accumulation_.copy_(accumulation);
}

void DgcCompressor::load_resharded(const std::vector<torch::serialize::InputArchive*>& saved) {
  torch::NoGradGuard no_grad;
  load(*saved.at(0));  // checks the sizes; both tensors are replaced by the means
  velocity_.copy_(saved_mean(saved, "topk/velocity"));
  accumulation_.copy_(saved_mean(saved, "topk/accumulation"));
}

}  // namespace gradsweep::strategies
