#pragma once
// SDK 1.4 unit events: what the host tells a strategy around each model unit's forward and backward
// (sdk::UnitEvent), from the model's own calls (it implements sdk::UnitHooks), an autograd hook on each
// unit's output (the backward's start) and one after each parameter's gradient accumulator (its end).
//
// Only strategies built against 1.4 get events, and only models built against 1.4 are asked for units
// and given the hooks; with an older model every parameter is in the root unit.
#include "plugins/plugin_instance.hpp"
#include "train/gradient_hooks.hpp"

#include <gradsweep/sdk/model.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include <torch/csrc/autograd/function.h>
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace gradsweep::train {

// The model's units (empty when it is older than 1.4 or declares none), checked against its parameters.
std::vector<sdk::ModelUnit> model_units(const plugins::ModelInstance& model, std::size_t parameter_count);

class UnitEvents final : public sdk::UnitHooks {
 public:
  UnitEvents(const plugins::StrategyInstance& strategy, const std::vector<sdk::ModelUnit>& units,
             const std::vector<torch::Tensor>& params);

  // The pass the next events belong to: a training micro-batch (its index, whether it is the step's
  // last) or evaluation (training false).
  void set_pass(bool training, std::int64_t micro_batch, bool last_micro_batch);
  void root_forward_begin() { send(sdk::UnitPhase::ForwardBegin, sdk::kRootUnit); }
  void root_forward_end() { send(sdk::UnitPhase::ForwardEnd, sdk::kRootUnit); }
  // Training: before loss.backward(), and after it returns (ends the units whose gradients never came).
  void backward_begin();
  void backward_done();

  sdk::Status before_forward(std::size_t unit) noexcept override;
  sdk::Status after_forward(std::size_t unit, const torch::Tensor& output) noexcept override;

 private:
  void send(sdk::UnitPhase phase, std::size_t unit);
  void accumulated(std::size_t slot);  // a parameter of unit slot (root: the last slot) got its gradient
  std::size_t slot_of(std::size_t unit) const { return unit == sdk::kRootUnit ? pending_.size() - 1 : unit; }
  std::size_t unit_of(std::size_t slot) const { return slot + 1 == pending_.size() ? sdk::kRootUnit : slot; }

  const plugins::StrategyInstance& strategy_;
  sdk::UnitEvent pass_;
  std::vector<std::size_t> expected_;  // per slot: how many of its parameters have a gradient accumulator
  std::vector<std::size_t> pending_;   // per slot: of those, how many have not reported in this backward
  std::vector<char> ended_;            // per slot: BackwardEnd sent in this backward
  bool in_backward_ = false;
  std::vector<AccumulatorHandle> accumulators_;  // hooks live as long as these
};

}  // namespace gradsweep::train
