#include "diloco_strategy.hpp"

#include "saved_mean.hpp"
#include "strategy_variants.hpp"

#include <gradsweep/sdk/model_optimizer_state.hpp>

#include <torch/torch.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace gradsweep::strategies {
namespace {

constexpr char kName[] = "diloco";

std::int64_t inner_steps_option(const sdk::Options& options) {
  const std::int64_t h = options.integer("inner_steps");
  if (h < 1)
    throw sdk::Error(std::string("strategy '") + kName + "': inner_steps must be >= 1, got " + std::to_string(h));
  return h;
}

// Calls `visit(slice, state tensor)` for every tensor of the optimizer state `target` holds (AdamW's
// moments, SGD's momentum), with the slice of the model its parameter lies at.
void for_each_state(sdk::SlicedOptimizer& target,
                    const std::function<void(const sdk::OptimizerSlice&, const char*, const torch::Tensor&)>& visit) {
  std::size_t i = 0;
  for (auto& group : target.optimizer->param_groups())
    for (auto& tensor : group.params()) {
      const sdk::OptimizerSlice& slice = target.slices.at(i++);
      const auto found = target.optimizer->state().find(tensor.unsafeGetTensorImpl());
      if (found == target.optimizer->state().end()) continue;
      if (const auto* adam = dynamic_cast<const torch::optim::AdamWParamState*>(found->second.get())) {
        const std::pair<const char*, torch::Tensor> fields[] = {{"exp_avg", adam->exp_avg()},
                                                                {"exp_avg_sq", adam->exp_avg_sq()},
                                                                {"max_exp_avg_sq", adam->max_exp_avg_sq()}};
        for (const auto& [name, value] : fields)
          if (value.defined()) visit(slice, name, value);
      } else if (const auto* sgd = dynamic_cast<const torch::optim::SGDParamState*>(found->second.get())) {
        if (sgd->momentum_buffer().defined()) visit(slice, "momentum_buffer", sgd->momentum_buffer());
      }
    }
}

// The element-wise mean of every old rank's inner optimizer state, into `target`: rank 0's gives the
// structure (and AdamW's step count, the same on every rank), the others' are added to it.
void restore_mean_state(sdk::SavedStates& saved, const sdk::OptimizerSpec& spec,
                        const std::vector<torch::Tensor>& params, sdk::SlicedOptimizer& target) {
  torch::NoGradGuard no_grad;
  sdk::ModelOptimizerState(saved, {0}, spec, params).restore(target);
  for (int r = 1; r < saved.world_size(); ++r) {
    const sdk::ModelOptimizerState other(saved, {r}, spec, params);
    for_each_state(target, [&](const sdk::OptimizerSlice& s, const char* name, const torch::Tensor& value) {
      const torch::Tensor field = other.field(static_cast<std::size_t>(s.param), name);
      if (!field.defined())
        throw sdk::Error(std::string("strategy '") + kName + "': old rank " + std::to_string(r) + " saved no " + name +
                         " for parameter " + std::to_string(s.param) + ", which rank 0 did");
      value.add_(field.narrow(0, s.offset, s.numel).view(value.sizes()).to(value.device()));
    });
  }
  const double inverse = 1.0 / static_cast<double>(saved.world_size());
  for_each_state(target,
                 [&](const sdk::OptimizerSlice&, const char*, const torch::Tensor& value) { value.mul_(inverse); });
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

void DilocoStrategy::on_save_state(torch::serialize::OutputArchive& archive) {
  inner_.save(archive);
  outer_.save(archive);
  archive.write("diloco_global", global_);
  archive.write("diloco_local", local_);
  archive.write("diloco_round_step", torch::tensor({round_step_}, torch::kLong));
}

void DilocoStrategy::on_load_state(torch::serialize::InputArchive& archive) {
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

// From a job of another world size. The global parameters, the outer momentum and the position in the round
// are the same on every old rank: from old rank 0. Each rank's local parameters and inner optimizer state are
// its own: every new rank takes the old ranks' mean. The outer step averages the locals, so the mean is what it
// would have used; the inner state is averaged element-wise alike (AdamW's second moment as a mean too).
// Between steps the model holds the global parameters (the host restored old rank 0's, which are those);
// they are set again from global_ so that the invariant does not rest on that.
void DilocoStrategy::on_load_resharded(sdk::SavedStates& saved) {
  torch::NoGradGuard no_grad;
  const std::vector<torch::serialize::InputArchive*> archives = saved_archives(saved);
  torch::serialize::InputArchive& first = *archives.front();
  outer_.load(first);
  torch::Tensor global, round_step;
  first.read("diloco_global", global);
  first.read("diloco_round_step", round_step);
  global_.copy_(global);
  local_.copy_(saved_mean(archives, "diloco_local"));
  round_step_ = round_step.item<std::int64_t>();
  restore_mean_state(saved, inner_.spec(), inner_.params(), inner_.sliced());
  layout_.unpack_parameters(global_, inner_.params());
  context().log.info(
      "resharded from " + std::to_string(saved.world_size()) + " ranks at inner step " + std::to_string(round_step_) +
      " of the round: local parameters = the mean of theirs, local - global " + norm_text(local_ - global_));
}

}  // namespace gradsweep::strategies
