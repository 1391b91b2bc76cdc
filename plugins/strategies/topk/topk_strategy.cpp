#include "topk_strategy.hpp"

#include "number_text.hpp"
#include "saved_mean.hpp"
#include "strategy_variants.hpp"

#include <gradsweep/sdk/model_optimizer_state.hpp>

#include <torch/torch.h>

#include <cmath>
#include <string>

namespace gradsweep::strategies {

TopkStrategy::TopkStrategy(const sdk::PluginContext& context)
    : Strategy(context),
      comm_(sdk::collective::with_algorithm(context.comm,
                                            algorithm_option(context.options, context.comm.features(), "topk"))),
      ratio_percent_(context.options.number("ratio_percent")),
      momentum_(context.options.number("momentum")),
      warmup_steps_(context.options.integer("warmup_steps")) {
  if (!(ratio_percent_ > 0.0 && ratio_percent_ <= 100.0))
    throw sdk::Error("strategy 'topk': ratio_percent is " + number_text(ratio_percent_) + " but must be in (0, 100]");
  if (!(momentum_ >= 0.0 && momentum_ < 1.0))
    throw sdk::Error("strategy 'topk': momentum is " + number_text(momentum_) + " but must be in [0, 1)");
  if (warmup_steps_ < 0)
    throw sdk::Error("strategy 'topk': warmup_steps is " + std::to_string(warmup_steps_) + " but must be >= 0");
}

void TopkStrategy::on_setup(const sdk::StrategySetup& setup) {
  sdk::StrategySetup unclipped = setup;
  grad_clip_ = setup.optimizer.grad_clip;
  unclipped.optimizer.grad_clip = 0.0;
  optimizer_.setup(unclipped);
  const sdk::OptimizerSpec& spec = setup.optimizer;
  if (momentum_ > 0.0 && (spec.kind != sdk::OptimizerSpec::Kind::SGD || spec.momentum != 0.0))
    context().log.warn("momentum correction (momentum " + number_text(momentum_) +
                       ") assumes plain SGD as the optimizer, but "
                       "the experiment's is " +
                       (spec.kind == sdk::OptimizerSpec::Kind::SGD
                            ? "SGD with momentum " + number_text(spec.momentum) + " (momentum applied twice)"
                            : std::string("AdamW")) +
                       "; set train.optimizer sgd and train.momentum 0, or strategy.momentum 0");
  compressor_.emplace(optimizer_.params(), ratio_percent_, momentum_);
  const auto options = optimizer_.params().front().options();
  const std::int64_t k = compressor_->selected(), ranks = comm_.size();
  flat_ = torch::zeros({compressor_->layout().numel()}, options);
  values_ = torch::zeros({k}, options);
  indices_ = torch::zeros({k}, options.dtype(torch::kInt));
  all_values_ = torch::zeros({k * ranks}, options);
  all_indices_ = torch::zeros({k * ranks}, options.dtype(torch::kInt));
  context().log.info(std::to_string(k) + " of " + std::to_string(flat_.numel()) + " gradient elements sent per step (" +
                     number_text(ratio_percent_) + "% of each tensor, at least one) from step " +
                     std::to_string(warmup_steps_));
  context().metrics.record("selected_elements", static_cast<double>(k));
}

void TopkStrategy::on_begin_step(const sdk::StepContext& step) {
  optimizer_.zero_grad();
  step_ = step.step;
}

// DGC's local clipping: with N ranks each rank's gradient is clipped at grad_clip / sqrt(N), so that the
// sum of N independent gradients has about the norm a single clip at grad_clip would allow.
void TopkStrategy::clip_locally() {
  if (grad_clip_ <= 0.0) return;
  const double limit = grad_clip_ / std::sqrt(static_cast<double>(comm_.size()));
  const double norm = flat_.norm().item<double>();
  if (norm > limit) flat_.mul_(limit / (norm + 1e-6));
}

void TopkStrategy::exchange_sparse() {
  compressor_->select(flat_, values_, indices_);
  sdk::check(comm_.allgather(values_, all_values_));
  sdk::check(comm_.allgather(indices_, all_indices_));
  DgcCompressor::densify(all_values_, all_indices_, comm_.size(), flat_);
}

void TopkStrategy::on_end_backward() {
  compressor_->layout().pack_gradients(optimizer_.params(), flat_);
  clip_locally();
  if (step_ < warmup_steps_) {
    compressor_->correct_dense(flat_);
    sdk::check(comm_.allreduce(flat_, sdk::ReduceOp::Sum));
  } else {
    exchange_sparse();
  }
  compressor_->layout().unpack_gradients(flat_, 1.0 / static_cast<double>(comm_.size()), optimizer_.params());
}

// grad_norm is the norm of the update applied (the mean of the sparse parts), the same on every rank.
sdk::StepResult TopkStrategy::on_update(const sdk::StepContext& step) { return optimizer_.step(step); }

void TopkStrategy::on_save_state(torch::serialize::OutputArchive& archive) {
  optimizer_.save(archive);
  compressor_->save(archive);
}

void TopkStrategy::on_load_state(torch::serialize::InputArchive& archive) {
  optimizer_.load(archive);
  compressor_->load(archive);
}

// From a job of another world size: the optimizer is the same on every old rank (all applied the same
// mean), so it comes from old rank 0; velocity and accumulation, each rank's own, become the old ranks'
// means (DgcCompressor::load_resharded). Local clipping's threshold, grad_clip / sqrt(N), follows the new N.
void TopkStrategy::on_load_resharded(sdk::SavedStates& saved) {
  sdk::ModelOptimizerState(saved, {0}, optimizer_.spec(), optimizer_.params()).restore(optimizer_.sliced());
  compressor_->load_resharded(saved_archives(saved));
  context().log.info("resharded from " + std::to_string(saved.world_size()) +
                     " ranks: accumulation = the mean of theirs, " + norm_text(compressor_->accumulation()) +
                     "; velocity = the mean of theirs, " + norm_text(compressor_->velocity()));
}

}  // namespace gradsweep::strategies
