#include "dps_strategy.hpp"

#include "strategy_variants.hpp"

#include <gradsweep/sdk/model_optimizer_state.hpp>

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gradsweep::strategies {

DpsStrategy::DpsStrategy(const sdk::PluginContext& context, MixedPrecision precision, const char* name)
    : Strategy(context),
      amp_(precision),
      comm_(sdk::collective::with_algorithm(context.comm,
                                            algorithm_option(context.options, context.comm.features(), name))) {}

void DpsStrategy::on_setup(const sdk::StrategySetup& setup) {
  params_ = sdk::tensors_of(setup.parameters);
  spec_ = setup.optimizer;
  layout_ = FlatLayout(params_);
  const std::int64_t n = comm_.size();
  shard_ = (layout_.numel() + n - 1) / n;
  shard_begin_ = comm_.rank() * shard_;
  const auto options = params_.front().options();
  grads_ = torch::zeros({shard_ * n}, options.dtype(amp_.comm_dtype()));
  grad_shard_ = torch::zeros({shard_}, options.dtype(amp_.comm_dtype()));
  master_grad_ = torch::zeros({shard_}, options.dtype(torch::kFloat));
  gathered_ = torch::zeros({shard_ * n}, options.dtype(torch::kFloat));

  // The optimizer sees this rank's slices of the parameters, each decayed or not by its parameter's shape;
  // the padding past the last parameter is in no slice.
  std::vector<torch::Tensor> tensors;
  std::vector<sdk::OptimizerSlice> slices;
  const std::int64_t shard_end = std::min(shard_begin_ + shard_, layout_.numel());
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const std::int64_t begin = std::max(shard_begin_, layout_.offset(i));
    const std::int64_t end = std::min(shard_end, layout_.offset(i) + layout_.numel(i));
    if (begin >= end) continue;
    torch::Tensor values = params_[i].detach().view({-1}).narrow(0, begin - layout_.offset(i), end - begin);
    values.mutable_grad() = master_grad_.narrow(0, begin - shard_begin_, end - begin);
    owned_.push_back({begin, values});
    tensors.push_back(values);
    slices.push_back({static_cast<std::int64_t>(i), begin - layout_.offset(i), end - begin});
  }
  optimizer_ = sdk::make_sliced_optimizer(spec_, tensors, slices, params_);
}

void DpsStrategy::on_begin_step(const sdk::StepContext& step) {
  step_ = step.step;
  for (torch::Tensor& p : params_)
    if (p.grad().defined()) p.mutable_grad().zero_();
}

void DpsStrategy::on_end_backward() {
  layout_.pack_gradients(params_, grads_);
  if (amp_.enabled()) amp_.maybe_inject_overflow(step_, comm_.rank(), grads_);
  sdk::check(comm_.reduce_scatter(grads_, grad_shard_, sdk::ReduceOp::Sum));
}

sdk::StepResult DpsStrategy::on_update(const sdk::StepContext& step) {
  const double scale = amp_.loss_scale();
  if (amp_.enabled()) {
    // Each rank sees only its shard: the ranks agree on overflow before anyone updates.
    const bool overflow = any_rank(comm_, MixedPrecision::has_overflow(grad_shard_));
    if (!amp_.finish_step(overflow, step.step, context().log, context().metrics)) return {false, 0.0};
  }
  master_grad_.copy_(grad_shard_);
  master_grad_.mul_(1.0 / (static_cast<double>(comm_.size()) * scale));

  // Global norm for clipping: the shards are disjoint, so the squared norms add up.
  torch::Tensor norm_squared = master_grad_.to(torch::kDouble).pow(2).sum().reshape({1});
  sdk::check(comm_.allreduce(norm_squared, sdk::ReduceOp::Sum));
  const double norm = std::sqrt(norm_squared.item<double>());
  if (spec_.grad_clip > 0 && norm > spec_.grad_clip) master_grad_.mul_(spec_.grad_clip / (norm + 1e-6));

  sdk::set_learning_rate(*optimizer_.optimizer, step.lr);
  optimizer_.optimizer->step();

  // Every rank contributes its updated shard and receives the others'.
  for (const OwnedSlice& s : owned_) gathered_.narrow(0, s.flat_offset, s.values.numel()).copy_(s.values);
  torch::Tensor mine = gathered_.narrow(0, shard_begin_, shard_);
  sdk::check(comm_.allgather(mine, gathered_));
  layout_.unpack_parameters(gathered_, params_);
  context().metrics.record("optimizer_state_bytes",
                           static_cast<double>(sdk::optimizer_state_bytes(*optimizer_.optimizer)));
  return {true, norm};
}

void DpsStrategy::on_save_state(torch::serialize::OutputArchive& archive) {
  optimizer_.save(archive);
  if (amp_.enabled()) amp_.save(archive);
}

void DpsStrategy::on_load_state(torch::serialize::InputArchive& archive) {
  optimizer_.load(archive);
  if (amp_.enabled()) amp_.load(archive);
}

// The optimizer updates views of the parameters, which the host has already restored in place, and the
// flat buffers are refilled each step: only the moments (cut from all old shards) and the loss scale (the
// same on every old rank) are carried over.
void DpsStrategy::on_load_resharded(sdk::SavedStates& saved) {
  std::vector<int> ranks(static_cast<std::size_t>(saved.world_size()));
  std::iota(ranks.begin(), ranks.end(), 0);
  sdk::ModelOptimizerState(saved, ranks, spec_, params_).restore(optimizer_);
  if (amp_.enabled()) amp_.load(sdk::saved_state(saved, 0));
}

}  // namespace gradsweep::strategies
