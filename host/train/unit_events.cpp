#include "train/unit_events.hpp"

#include "train/gradient_hooks.hpp"

#include <torch/csrc/autograd/variable.h>

#include <stdexcept>
#include <string>

namespace gradsweep::train {

std::vector<sdk::ModelUnit> model_units(const plugins::ModelInstance& model, std::size_t parameter_count) {
  std::vector<sdk::ModelUnit> units;
  if (!model.call_if_present<&sdk::ModelAbi::units>(&units)) return units;  // built before 1.4: no units
  std::vector<int> owner(parameter_count, -1);
  for (std::size_t u = 0; u < units.size(); ++u)
    for (std::size_t i : units[u].parameters) {
      if (i >= parameter_count)
        throw std::runtime_error("model '" + model.record().name + "' unit '" + units[u].name + "' names parameter " +
                                 std::to_string(i) + " but the model has " + std::to_string(parameter_count));
      if (owner[i] >= 0)
        throw std::runtime_error("model '" + model.record().name + "': parameter " + std::to_string(i) +
                                 " is in units '" + units[static_cast<std::size_t>(owner[i])].name + "' and '" +
                                 units[u].name + "'; a parameter belongs to one unit at most");
      owner[i] = static_cast<int>(u);
    }
  return units;
}

UnitEvents::UnitEvents(const plugins::StrategyInstance& strategy, const std::vector<sdk::ModelUnit>& units,
                       const std::vector<torch::Tensor>& params)
    : strategy_(strategy), expected_(units.size() + 1, 0), pending_(units.size() + 1, 0), ended_(units.size() + 1, 0) {
  std::vector<std::size_t> slot(params.size(), units.size());  // the root's slot unless a unit claims it
  for (std::size_t u = 0; u < units.size(); ++u)
    for (std::size_t i : units[u].parameters) slot[i] = u;
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto accumulator = add_accumulator_hook(params[i], [this, s = slot[i]] { accumulated(s); });
    if (!accumulator) continue;  // no gradient ever: the unit ends without it
    ++expected_[slot[i]];
    accumulators_.push_back(std::move(accumulator));
  }
}

void UnitEvents::set_pass(bool training, std::int64_t micro_batch, bool last_micro_batch) {
  pass_.training = training;
  pass_.micro_batch = micro_batch;
  pass_.last_micro_batch = last_micro_batch;
}

void UnitEvents::send(sdk::UnitPhase phase, std::size_t unit) {
  sdk::UnitEvent event = pass_;
  event.phase = phase;
  event.unit = unit;
  strategy_.call<&sdk::StrategyAbi::unit_event>(event);
}

void UnitEvents::backward_begin() {
  pending_ = expected_;
  std::fill(ended_.begin(), ended_.end(), 0);
  in_backward_ = true;
  send(sdk::UnitPhase::BackwardBegin, sdk::kRootUnit);
}

void UnitEvents::accumulated(std::size_t slot) {
  if (!in_backward_ || pending_[slot] == 0) return;
  if (--pending_[slot] > 0) return;
  ended_[slot] = 1;
  send(sdk::UnitPhase::BackwardEnd, unit_of(slot));
}

void UnitEvents::backward_done() {
  in_backward_ = false;
  // Units before the root, then the root: the root's BackwardEnd is always the last event of a backward.
  for (std::size_t slot = 0; slot < ended_.size(); ++slot)
    if (!ended_[slot]) send(sdk::UnitPhase::BackwardEnd, unit_of(slot));
}

sdk::Status UnitEvents::before_forward(std::size_t unit) noexcept {
  return sdk::guard([&] {
    if (unit + 1 >= pending_.size())
      throw std::runtime_error("before_forward: unit " + std::to_string(unit) + " is not one of the model's " +
                               std::to_string(pending_.size() - 1) + " units");
    send(sdk::UnitPhase::ForwardBegin, unit);
  });
}

sdk::Status UnitEvents::after_forward(std::size_t unit, const torch::Tensor& output) noexcept {
  return sdk::guard([&] {
    if (unit + 1 >= pending_.size())
      throw std::runtime_error("after_forward: unit " + std::to_string(unit) + " is not one of the model's " +
                               std::to_string(pending_.size() - 1) + " units");
    send(sdk::UnitPhase::ForwardEnd, unit);
    if (!pass_.training || !torch::GradMode::is_enabled() || !output.requires_grad()) return;
    // A tensor hook runs when the output's gradient is complete, before the unit's own backward nodes.
    torch::Tensor handle = output;
    handle.register_hook([this, unit](const torch::Tensor& grad) {
      send(sdk::UnitPhase::BackwardBegin, unit);
      return grad;
    });
  });
}

}  // namespace gradsweep::train
