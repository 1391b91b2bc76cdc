#include "powersgd_strategy.hpp"

#include "saved_mean.hpp"
#include "strategy_variants.hpp"

#include <gradsweep/sdk/model_optimizer_state.hpp>

#include <torch/torch.h>

#include <memory>
#include <string>

namespace gradsweep::strategies {
namespace {

std::int64_t at_least(const sdk::Options& options, const std::string& key, std::int64_t minimum) {
  const std::int64_t value = options.integer(key);
  if (value < minimum)
    throw sdk::Error("strategy 'powersgd': " + key + " is " + std::to_string(value) +
                     " but must be >= " + std::to_string(minimum));
  return value;
}

void wait(std::unique_ptr<sdk::Request>& request) {
  if (request) sdk::check(request->wait());
  request.reset();
}

}  // namespace

PowerSgdStrategy::PowerSgdStrategy(const sdk::PluginContext& context)
    : Strategy(context),
      comm_(sdk::collective::with_algorithm(context.comm,
                                            algorithm_option(context.options, context.comm.features(), "powersgd"))),
      settings_{at_least(context.options, "rank", 1), at_least(context.options, "min_compress_size", 0),
                static_cast<std::uint64_t>(context.options.integer("seed"))},
      start_step_(at_least(context.options, "start_step", 0)) {}

void PowerSgdStrategy::on_setup(const sdk::StrategySetup& setup) {
  optimizer_.setup(setup);
  compressor_.emplace(optimizer_.params(), settings_);
  flat_ = torch::zeros({compressor_->layout().numel()}, optimizer_.params().front().options());
  const double sent = static_cast<double>(compressor_->p_numel() + compressor_->q_numel() + compressor_->dense_numel());
  context().log.info("rank " + std::to_string(settings_.rank) + ": " + std::to_string(compressor_->compressed_count()) +
                     " of " + std::to_string(optimizer_.params().size()) + " tensors compressed; " +
                     std::to_string(static_cast<std::int64_t>(sent)) + " floats allreduced per step instead of " +
                     std::to_string(flat_.numel()) + " from step " + std::to_string(start_step_));
  context().metrics.record("compression_ratio", static_cast<double>(flat_.numel()) / sent);
}

void PowerSgdStrategy::on_begin_step(const sdk::StepContext& step) {
  optimizer_.zero_grad();
  step_ = step.step;
}

void PowerSgdStrategy::allreduce_dense() {
  sdk::check(comm_.allreduce(flat_, sdk::ReduceOp::Sum));
  flat_.mul_(1.0 / static_cast<double>(comm_.size()));
}

// Three messages: the uncompressed tensors and P travel together, Q once P is orthogonalised.
void PowerSgdStrategy::allreduce_compressed() {
  PowerSgdCompressor& c = *compressor_;
  c.prepare(flat_);
  std::unique_ptr<sdk::Request> dense, p, q;
  if (c.dense_numel() > 0) sdk::check(comm_.allreduce_async(c.dense(), sdk::ReduceOp::Sum, &dense));
  if (c.p_numel() > 0) sdk::check(comm_.allreduce_async(c.p(), sdk::ReduceOp::Sum, &p));
  wait(p);
  c.after_p_sum(flat_);
  if (c.q_numel() > 0) sdk::check(comm_.allreduce_async(c.q(), sdk::ReduceOp::Sum, &q));
  wait(q);
  wait(dense);
  c.finish(flat_, comm_.size());
}

void PowerSgdStrategy::on_end_backward() {
  compressor_->layout().pack_gradients(optimizer_.params(), flat_);
  if (step_ < start_step_)
    allreduce_dense();
  else
    allreduce_compressed();
  compressor_->layout().unpack_gradients(flat_, 1.0, optimizer_.params());
}

// Every rank holds the same gradient, so the clipping norm and the update agree without a message.
sdk::StepResult PowerSgdStrategy::on_update(const sdk::StepContext& step) { return optimizer_.step(step); }

void PowerSgdStrategy::on_save_state(torch::serialize::OutputArchive& archive) {
  optimizer_.save(archive);
  compressor_->save(archive);
}

void PowerSgdStrategy::on_load_state(torch::serialize::InputArchive& archive) {
  optimizer_.load(archive);
  compressor_->load(archive);
}

// From a job of another world size: the optimizer, Q and "started" are the same on every old rank (all
// applied the same decompressed mean), so they come from old rank 0; each rank's error feedback becomes
// the mean of the old ranks' residuals, which keeps (1/N) * their sum, what the next averaged gradient
// adds back (PowerSgdCompressor::load_resharded). The decompressed gradient approximates the mean over
// ranks of gradient + residual, and a global batch's mean gradient does not depend on N: with the mean
// residual the resumed run continues as the uninterrupted one, up to the order of the sums.
void PowerSgdStrategy::on_load_resharded(sdk::SavedStates& saved) {
  sdk::ModelOptimizerState(saved, {0}, optimizer_.spec(), optimizer_.params()).restore(optimizer_.sliced());
  compressor_->load_resharded(saved_archives(saved));
  context().log.info("resharded from " + std::to_string(saved.world_size()) +
                     " ranks: error feedback = the mean of theirs, " + norm_text(compressor_->error()));
}

}  // namespace gradsweep::strategies
