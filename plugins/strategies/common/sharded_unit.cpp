#include "sharded_unit.hpp"

#include "storage_release.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

namespace gradsweep::strategies {

ShardedUnit::ShardedUnit(std::string name, std::vector<torch::Tensor> params, std::vector<std::size_t> indices,
                         int rank, int world)
    : name_(std::move(name)), params_(std::move(params)), indices_(std::move(indices)) {
  for (const auto& p : params_) {
    offsets_.push_back(numel_);
    numel_ += p.numel();
  }
  shard_numel_ = (numel_ + world - 1) / world;
  padded_ = shard_numel_ * world;
  shard_begin_ = shard_numel_ * rank;
  const auto options = params_.front().options().requires_grad(false);
  element_size_ = static_cast<std::int64_t>(params_.front().element_size());
  flat_ = torch::zeros({padded_}, options);
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    torch::Tensor view = flat_.narrow(0, offsets_[i], params_[i].numel()).view(params_[i].sizes());
    view.copy_(params_[i].detach());
    params_[i].set_data(view);
  }
  shard_ = flat_.narrow(0, shard_begin_, shard_numel_).clone();
  grad_shard_ = torch::zeros({shard_numel_}, options);
  release();
}

void ShardedUnit::gather(sdk::Communicator& comm) {
  if (pending_) sdk::collective::wait(pending_);
  if (gathered_) return;
  reallocate_storage(flat_, static_cast<std::size_t>(full_bytes()));
  sdk::check(comm.allgather(shard_, flat_));
  gathered_ = true;
}

void ShardedUnit::prefetch(sdk::Communicator& comm) {
  if (gathered_) return;
  reallocate_storage(flat_, static_cast<std::size_t>(full_bytes()));
  gathered_ = true;
  pending_ = sdk::collective::allgather_async(comm, shard_, flat_);
}

void ShardedUnit::release() {
  if (!gathered_) return;
  if (pending_) sdk::collective::wait(pending_);
  release_storage(flat_);
  gathered_ = false;
}

void ShardedUnit::reduce_gradients(sdk::Communicator& comm) {
  torch::NoGradGuard no_grad;
  torch::Tensor grads = torch::zeros({padded_}, grad_shard_.options());
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& g = params_[i].grad();
    if (g.defined()) grads.narrow(0, offsets_[i], params_[i].numel()).copy_(g.reshape({-1}));
    params_[i].mutable_grad().reset();
  }
  torch::Tensor mine = torch::empty({shard_numel_}, grad_shard_.options());
  sdk::check(comm.reduce_scatter(grads, mine, sdk::ReduceOp::Sum));
  grad_shard_.add_(mine);
}

void ShardedUnit::adopt_gathered() { shard_.copy_(flat_.narrow(0, shard_begin_, shard_numel_)); }

void ShardedUnit::add_optimizer_slices(std::vector<torch::Tensor>& tensors,
                                       std::vector<sdk::OptimizerSlice>& slices) const {
  const std::int64_t shard_end = shard_begin_ + shard_numel_;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const std::int64_t begin = std::max(shard_begin_, offsets_[i]);
    const std::int64_t end = std::min(shard_end, offsets_[i] + params_[i].numel());
    if (begin >= end) continue;
    torch::Tensor values = shard_.narrow(0, begin - shard_begin_, end - begin);
    values.mutable_grad() = grad_shard_.narrow(0, begin - shard_begin_, end - begin);
    tensors.push_back(values);
    slices.push_back({static_cast<std::int64_t>(indices_[i]), begin - offsets_[i], end - begin});
  }
}

double step_shards(std::vector<ShardedUnit>& units, sdk::Communicator& norm_group, int ranks,
                   const sdk::OptimizerSpec& spec, sdk::SlicedOptimizer& optimizer, double lr) {
  torch::Tensor norm_squared = torch::zeros({1}, torch::kDouble);
  for (ShardedUnit& u : units) {
    u.gradient_shard().mul_(1.0 / static_cast<double>(ranks));
    norm_squared += u.gradient_shard().to(torch::kDouble).pow(2).sum().cpu();
  }
  sdk::collective::allreduce(norm_group, norm_squared);
  const double norm = std::sqrt(norm_squared.item<double>());
  if (spec.grad_clip > 0 && norm > spec.grad_clip)
    for (ShardedUnit& u : units) u.gradient_shard().mul_(spec.grad_clip / (norm + 1e-6));
  sdk::set_learning_rate(*optimizer.optimizer, lr);
  optimizer.optimizer->step();
  return norm;
}

}  // namespace gradsweep::strategies
