#pragma once
// Where each parameter lives in one flat vector of all parameters, in the model's parameter order.
//
// Every strategy that moves gradients or parameters as one buffer (a parameter server's push and pull,
// a ZeRO shard, a fusion bucket) packs and unpacks through this, so the packing is written once. Packing
// casts to the buffer's dtype (16-bit gradients on the wire) and treats a missing gradient as zeros.
#include <gradsweep/sdk/model.hpp>

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace gradsweep::strategies {

class FlatLayout {
 public:
  FlatLayout() = default;
  explicit FlatLayout(const std::vector<torch::Tensor>& params);

  std::int64_t numel() const { return total_; }
  std::size_t count() const { return offsets_.size(); }
  std::int64_t offset(std::size_t i) const { return offsets_[i]; }
  std::int64_t numel(std::size_t i) const { return sizes_[i]; }

  // The slice of `flat` that holds parameter i.
  torch::Tensor slice(const torch::Tensor& flat, std::size_t i) const { return flat.narrow(0, offsets_[i], sizes_[i]); }

  // flat[i's slice] = grad of i (cast to flat's dtype), or zeros when it has none.
  void pack_gradient(const torch::Tensor& param, std::size_t i, torch::Tensor& flat) const;
  void pack_gradients(const std::vector<torch::Tensor>& params, torch::Tensor& flat) const;
  // grad of every parameter = flat's slice * scale (in the parameter's dtype); creates missing gradients.
  void unpack_gradients(const torch::Tensor& flat, double scale, const std::vector<torch::Tensor>& params) const;

  void pack_parameters(const std::vector<torch::Tensor>& params, torch::Tensor& flat) const;
  void unpack_parameters(const torch::Tensor& flat, const std::vector<torch::Tensor>& params) const;

 private:
  std::vector<std::int64_t> offsets_, sizes_;
  std::int64_t total_ = 0;
};

}  // namespace gradsweep::strategies
