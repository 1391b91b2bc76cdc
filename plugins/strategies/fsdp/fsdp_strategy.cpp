#include "fsdp_strategy.hpp"

#include "strategy_variants.hpp"
#include "unit_parameters.hpp"

#include <gradsweep/sdk/model_optimizer_state.hpp>

#include <torch/torch.h>

#include <algorithm>
#include <numeric>

namespace gradsweep::strategies {

FsdpStrategy::FsdpStrategy(const sdk::PluginContext& context)
    : Strategy(context),
      comm_(sdk::collective::with_algorithm(context.comm,
                                            algorithm_option(context.options, context.comm.features(), "fsdp"))) {}

void FsdpStrategy::on_setup(const sdk::StrategySetup& setup) {
  spec_ = setup.optimizer;
  params_ = sdk::tensors_of(setup.parameters);
  if (setup.units.empty())
    context().log.warn(
        "the model declares no units, so it runs as one unit: sharded at rest, the whole model "
        "gathered for each forward and backward (peak parameter memory = the model plus 1/N of it)");
  auto groups = unit_parameters(setup);
  has_root_ = !groups.back().empty();
  if (!has_root_) groups.pop_back();
  for (std::size_t u = 0; u < groups.size(); ++u) {
    const bool root = u == setup.units.size();
    if (groups[u].empty()) throw sdk::Error("fsdp: unit '" + setup.units[u].name + "' has no parameters");
    std::vector<torch::Tensor> members;
    for (std::size_t i : groups[u]) members.push_back(params_[i]);
    units_.emplace_back(root ? "root" : setup.units[u].name, std::move(members), std::move(groups[u]), comm_.rank(),
                        comm_.size());
    resident_bytes_ += units_.back().shard_bytes();
  }
  peak_bytes_ = resident_bytes_;
  std::vector<torch::Tensor> tensors;
  std::vector<sdk::OptimizerSlice> slices;
  for (const ShardedUnit& u : units_) u.add_optimizer_slices(tensors, slices);
  optimizer_ = sdk::make_sliced_optimizer(spec_, tensors, slices, params_);
}

void FsdpStrategy::gather(ShardedUnit& u) {
  if (u.gathered()) return;
  u.gather(comm_);
  resident_bytes_ += u.full_bytes();
  peak_bytes_ = std::max(peak_bytes_, resident_bytes_);
}

void FsdpStrategy::release(ShardedUnit& u) {
  if (!u.gathered()) return;
  u.release();
  resident_bytes_ -= u.full_bytes();
}

void FsdpStrategy::on_begin_step(const sdk::StepContext& /*step*/) {
  for (ShardedUnit& u : units_) u.gradient_shard().zero_();
}

void FsdpStrategy::on_unit_event(const sdk::UnitEvent& event) {
  const bool root = event.unit == sdk::kRootUnit;
  if (root && !has_root_) return;
  ShardedUnit& u = root ? units_.back() : units_.at(event.unit);
  switch (event.phase) {
    case sdk::UnitPhase::ForwardBegin:
    case sdk::UnitPhase::BackwardBegin: gather(u); break;
    // The root stays for backward: its parameters (the tied head) are used at both ends of the model.
    case sdk::UnitPhase::ForwardEnd:
      if (!root || !event.training) release(u);
      break;
    case sdk::UnitPhase::BackwardEnd:
      if (event.last_micro_batch) u.reduce_gradients(comm_);
      release(u);
      break;
  }
}

void FsdpStrategy::on_end_backward() {
  for (ShardedUnit& u : units_) release(u);
}

sdk::StepResult FsdpStrategy::on_update(const sdk::StepContext& step) {
  // The shards are disjoint: their squared norms add up to the global one.
  const double norm = step_shards(units_, comm_, comm_.size(), spec_, optimizer_, step.lr);

  context().metrics.record("param_bytes_resident", static_cast<double>(peak_bytes_));
  context().metrics.record("optimizer_state_bytes",
                           static_cast<double>(sdk::optimizer_state_bytes(*optimizer_.optimizer)));
  peak_bytes_ = resident_bytes_;
  return {true, norm};
}

void FsdpStrategy::on_hold_parameters(bool hold) {
  for (ShardedUnit& u : units_) {
    if (hold) {
      gather(u);
    } else {
      u.adopt_gathered();
      release(u);
    }
  }
  if (!hold) peak_bytes_ = resident_bytes_;  // the checkpoint's whole model is no step's
}

void FsdpStrategy::on_save_state(torch::serialize::OutputArchive& archive) { optimizer_.save(archive); }

void FsdpStrategy::on_load_state(torch::serialize::InputArchive& archive) { optimizer_.load(archive); }

// The host restored the whole parameters under hold_parameters, whose release made them this rank's new
// shards (adopt_gathered), which the optimizer's tensors view: only the moments, cut from all old shards,
// are left to carry over. Gradient shards are zeroed every step.
void FsdpStrategy::on_load_resharded(sdk::SavedStates& saved) {
  std::vector<int> ranks(static_cast<std::size_t>(saved.world_size()));
  std::iota(ranks.begin(), ranks.end(), 0);
  sdk::ModelOptimizerState(saved, ranks, spec_, params_).restore(optimizer_);
}

}  // namespace gradsweep::strategies
