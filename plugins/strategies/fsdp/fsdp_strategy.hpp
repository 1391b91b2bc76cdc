#pragma once
// `fsdp`: fully sharded data parallel (ZeRO stage 3, as PyTorch FSDP). Parameters, gradients and
// optimizer state are sharded at rest; each model unit (SDK 1.4 ModelUnit) is all-gathered just before
// its forward and again before its backward and freed after each, and its gradients are reduce-scattered
// into this rank's shard as soon as its backward ends. The root unit (parameters in no unit) stays
// gathered from the start of forward to the end of backward. Peak parameter memory per rank is about
// (model / N) + root + the largest unit.
//
// Micro-batches: full gradients are kept (accumulated by autograd) until the last micro-batch, whose
// backward reduce-scatters them unit by unit; earlier micro-batches only free the parameters.
#include "algorithm_option.hpp"
#include "sharded_unit.hpp"

#include <gradsweep/sdk/optimizer.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include <array>
#include <memory>
#include <vector>

namespace gradsweep::strategies {

inline constexpr std::array<sdk::OptionDecl, 1> kFsdpOptions{{
    {"algorithm", sdk::OptionType::String, "native",
     "native: the backend's all-gather and reduce-scatter; ring: gradsweep's ring over point-to-point; "
     "hierarchical: the ring's, with the gradient norm's allreduce hierarchical",
     kAlgorithmChoices},
}};

class FsdpStrategy final : public sdk::Strategy {
 public:
  // Every rank applies the same step; the `algorithm` option's needs are checked per cell.
  static constexpr auto kCapabilities = sdk::StrategyCapabilities{}.exact().agreeing().resharding().units();
  static void check_plan(const sdk::PlanFacts& facts, sdk::PlanAnswer& answer) {
    check_algorithm_plan(facts, answer, "fsdp");
  }

  explicit FsdpStrategy(const sdk::PluginContext& context);

 protected:
  void on_setup(const sdk::StrategySetup& setup) override;
  void on_begin_step(const sdk::StepContext& step) override;
  void on_unit_event(const sdk::UnitEvent& event) override;
  void on_end_backward() override;
  sdk::StepResult on_update(const sdk::StepContext& step) override;
  void on_hold_parameters(bool hold) override;
  void on_save_state(torch::serialize::OutputArchive& archive) override;
  void on_load_state(torch::serialize::InputArchive& archive) override;
  void on_load_resharded(sdk::SavedStates& saved) override;

 private:
  void gather(ShardedUnit& u);
  void release(ShardedUnit& u);

  sdk::Communicator& comm_;
  sdk::OptimizerSpec spec_;
  std::vector<torch::Tensor> params_;  // the model's parameters (shapes only: their storage is the units')
  std::vector<ShardedUnit> units_;     // the declared units in order, then the root (if any parameter is in none)
  bool has_root_ = true;
  sdk::SlicedOptimizer optimizer_;
  std::int64_t resident_bytes_ = 0;  // shards plus gathered units, now
  std::int64_t peak_bytes_ = 0;      // its maximum since the last update
};

}  // namespace gradsweep::strategies
