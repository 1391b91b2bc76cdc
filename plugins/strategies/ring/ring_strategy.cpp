#include "ring_strategy.hpp"

#include "strategy_variants.hpp"

#include <gradsweep/sdk/model_optimizer_state.hpp>

#include <torch/torch.h>

#include <algorithm>

namespace gradsweep::strategies {

RingStrategy::RingStrategy(const sdk::PluginContext& context, MixedPrecision precision, const char* name)
    : Strategy(context),
      name_(name),
      amp_(precision),
      comm_(sdk::collective::with_algorithm(context.comm,
                                            algorithm_option(context.options, context.comm.features(), name))),
      bucket_mb_(context.options.number("bucket_mb")),
      first_bucket_mb_(std::min(bucket_mb_, context.options.number("first_bucket_mb"))),
      overlap_(context.options.flag("overlap")) {
  if (bucket_mb_ <= 0 || first_bucket_mb_ <= 0)
    throw sdk::Error("strategy '" + name_ + "': bucket_mb and first_bucket_mb must be > 0");
}

void RingStrategy::on_setup(const sdk::StrategySetup& setup) {
  optimizer_.setup(setup);
  constexpr double kMiB = 1024.0 * 1024.0;
  buckets_.emplace(optimizer_.params(), static_cast<std::int64_t>(first_bucket_mb_ * kMiB),
                   static_cast<std::int64_t>(bucket_mb_ * kMiB), amp_.comm_dtype());
  context().metrics.record("buckets", static_cast<double>(buckets_->buckets().size()));
}

void RingStrategy::on_begin_step(const sdk::StepContext& step) {
  optimizer_.zero_grad();
  buckets_->begin_step();
  step_ = step.step;
}

void RingStrategy::launch(Bucket& bucket) {
  if (amp_.enabled()) amp_.maybe_inject_overflow(step_, comm_.rank(), bucket.buffer);
  sdk::check(comm_.allreduce_async(bucket.buffer, sdk::ReduceOp::Sum, &bucket.request));
}

void RingStrategy::on_gradient_ready(std::size_t index) {
  if (overlap_)
    buckets_->ready(index, [this](Bucket& b) { launch(b); });
  else
    buckets_->ready(index, {});
}

void RingStrategy::on_end_backward() {
  // Without overlap nothing was launched yet: launch every bucket now, in order.
  buckets_->finish([this](Bucket& b) { launch(b); });
}

sdk::StepResult RingStrategy::on_update(const sdk::StepContext& step) {
  // Every rank holds the same sums, so every rank reaches the same verdict without asking the others.
  bool overflow = false;
  if (amp_.enabled())
    for (const Bucket& b : buckets_->buckets()) overflow = overflow || MixedPrecision::has_overflow(b.buffer);
  const double scale = amp_.loss_scale();
  if (amp_.enabled() && !amp_.finish_step(overflow, step.step, context().log, context().metrics)) return {false, 0.0};
  // Average over ranks and undo the loss scale in one multiply, back into each parameter's float32 grad.
  const double factor = 1.0 / (static_cast<double>(comm_.size()) * scale);
  for (Bucket& b : buckets_->buckets()) {
    std::vector<torch::Tensor> members;
    for (std::size_t i : b.params) members.push_back(optimizer_.params()[i]);
    b.layout.unpack_gradients(b.buffer, factor, members);
  }
  const sdk::StepResult result = optimizer_.step(step);
  context().metrics.record("optimizer_state_bytes",
                           static_cast<double>(sdk::optimizer_state_bytes(optimizer_.optimizer())));
  return result;
}

void RingStrategy::on_save_state(torch::serialize::OutputArchive& archive) {
  optimizer_.save(archive);
  if (amp_.enabled()) amp_.save(archive);
}

void RingStrategy::on_load_state(torch::serialize::InputArchive& archive) {
  optimizer_.load(archive);
  if (amp_.enabled()) amp_.load(archive);
}

// Every rank applied the same averaged gradient with the same optimizer, so every old rank saved the same
// state and none of it depends on the world size: the optimizer and the loss scale come from old rank 0.
void RingStrategy::on_load_resharded(sdk::SavedStates& saved) {
  sdk::ModelOptimizerState(saved, {0}, optimizer_.spec(), optimizer_.params()).restore(optimizer_.sliced());
  if (amp_.enabled()) amp_.load(sdk::saved_state(saved, 0));
}

}  // namespace gradsweep::strategies
