#include "diloco_strategy.hpp"

#include "strategy_variants.hpp"

#include <torch/torch.h>

namespace gradsweep::strategies {
namespace {

constexpr char kName[] = "diloco";

std::int64_t inner_steps_option(const sdk::Options& options) {
  const std::int64_t h = options.integer("inner_steps");
  if (h < 1)
    throw sdk::Error(std::string("strategy '") + kName + "': inner_steps must be >= 1, got " + std::to_string(h));
  return h;
}

}  // namespace

DilocoStrategy::DilocoStrategy(const sdk::PluginContext& context)
    : Strategy(context),
      comm_(sdk::collective::with_algorithm(context.comm,
                                            algorithm_option(context.options, context.comm.features(), kName))),
      inner_steps_(inner_steps_option(context.options)),
      outer_(kName, context.options.number("outer_lr"), context.options.number("outer_momentum"),
             context.options.flag("nesterov")) {}

void DilocoStrategy::on_setup(const sdk::StrategySetup& setup) {
  inner_.setup(setup);
  for (const auto& p : setup.parameters)
    if (p.tensor.scalar_type() != torch::kFloat)
      throw sdk::Error(std::string("strategy '") + kName + "' runs in float32, but parameter '" + p.name + "' is " +
                       std::string(c10::toString(p.tensor.scalar_type())));
  layout_ = FlatLayout(inner_.params());
  global_ = torch::empty({layout_.numel()}, inner_.params().front().options().requires_grad(false));
  layout_.pack_parameters(inner_.params(), global_);
  local_ = global_.clone();
  outer_.setup(global_);
}

void DilocoStrategy::on_begin_step(const sdk::StepContext&) {
  inner_.zero_grad();
  // The model holds the global parameters between steps; inside a round this rank continues from its own.
  if (round_step_ > 0) layout_.unpack_parameters(local_, inner_.params());
}

sdk::StepResult DilocoStrategy::on_update(const sdk::StepContext& step) {
  // Clipping uses this rank's gradient norm: inner steps do not communicate.
  const sdk::StepResult result = inner_.step(step);
  layout_.pack_parameters(inner_.params(), local_);
  const bool outer = ++round_step_ == inner_steps_;
  if (outer) {
    outer_step();
    round_step_ = 0;
  }
  layout_.unpack_parameters(global_, inner_.params());
  sdk::MetricsSink& metrics = context().metrics;
  metrics.record("outer_step", outer ? 1.0 : 0.0);
  metrics.record("outer_state_bytes", static_cast<double>(outer_.state_bytes()));
  metrics.record("optimizer_state_bytes",
                 static_cast<double>(sdk::optimizer_state_bytes(inner_.optimizer()) + outer_.state_bytes()));
  return result;
}

// The round's only communication: one allreduce of every parameter, the same bytes as one step of `ring`.
void DilocoStrategy::outer_step() {
  torch::NoGradGuard no_grad;
  sdk::collective::allreduce(comm_, local_);
  local_.div_(comm_.size());
  // The outer gradient, global - mean(local), computed in place in local_ (negating is exact).
  local_.sub_(global_).neg_();
  outer_.step(global_, local_);
  local_.copy_(global_);
}

void DilocoStrategy::save(torch::serialize::OutputArchive& archive) {
  inner_.save(archive);
  outer_.save(archive);
  archive.write("diloco_global", global_);
  archive.write("diloco_local", local_);
  archive.write("diloco_round_step", torch::tensor({round_step_}, torch::kLong));
}

void DilocoStrategy::load(torch::serialize::InputArchive& archive) {
  inner_.load(archive);
  outer_.load(archive);
  torch::Tensor global, local, round_step;
  archive.read("diloco_global", global);
  archive.read("diloco_local", local);
  archive.read("diloco_round_step", round_step);
  global_.copy_(global);
  local_.copy_(local);
  round_step_ = round_step.item<std::int64_t>();
}

}  // namespace gradsweep::strategies
