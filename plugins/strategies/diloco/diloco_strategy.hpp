#pragma once
// `diloco`: local SGD with an outer optimizer (Douillard et al. 2023, "DiLoCo: Distributed Low-Communication
// Training of Language Models"). Each rank takes `inner_steps` (H) steps of the experiment's optimizer on its
// own part of each global batch, with no communication; then one allreduce of the parameters gives their
// mean, the outer gradient is the global parameters minus that mean, and the outer optimizer (Nesterov
// momentum SGD) applies it to the global parameters, from which every rank starts the next round. Each
// rank keeps its own inner optimizer state across rounds, as in the paper.
//
// Between steps the model holds the global parameters and this strategy keeps each rank's own in `local_`:
// whatever the trainer does between steps (evaluation, a checkpoint of the model) then sees the one model
// every rank agrees on, the model DiLoCo produces, not each rank's unsynchronised copy. The price is one
// copy of the parameters into and out of the model per step, and one more flat copy of them.
#include "algorithm_option.hpp"
#include "flat_layout.hpp"
#include "outer_optimizer.hpp"

#include <gradsweep/sdk/optimizer.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include <array>
#include <cstdint>

namespace gradsweep::strategies {

inline constexpr std::array<sdk::OptionDecl, 5> kDilocoOptions{{
    {"inner_steps", sdk::OptionType::Int, "50",
     "H: inner optimizer steps per round (one parameter allreduce per round)"},
    {"outer_lr", sdk::OptionType::Float, "0.7", "outer SGD learning rate (the paper's 0.7)"},
    {"outer_momentum", sdk::OptionType::Float, "0.9", "outer SGD momentum, in [0, 1) (the paper's 0.9)"},
    {"nesterov", sdk::OptionType::Bool, "true", "Nesterov momentum for the outer step (the paper's choice)"},
    {"algorithm", sdk::OptionType::String, "auto",
     "auto: ring on MPI, native on NCCL; allreduce of the parameters: ring (gradsweep's), hierarchical, or native (the "
     "backend's)",
     kAlgorithmChoices},
}};

class DilocoStrategy final : public sdk::Strategy {
 public:
  // Between steps every rank holds the round's global parameters; the `algorithm` option's needs are checked per cell.
  // Resumes at any world size (on_load_resharded).
  static constexpr auto kCapabilities = sdk::StrategyCapabilities{}.agreeing().resharding();
  static void check_plan(const sdk::PlanFacts& facts, sdk::PlanAnswer& answer) {
    check_algorithm_plan(facts, answer, "diloco");
  }

  explicit DilocoStrategy(const sdk::PluginContext& context);

 protected:
  void on_setup(const sdk::StrategySetup& setup) override;
  void on_begin_step(const sdk::StepContext& step) override;
  sdk::StepResult on_update(const sdk::StepContext& step) override;
  void on_save_state(torch::serialize::OutputArchive& archive) override;
  void on_load_state(torch::serialize::InputArchive& archive) override;
  void on_load_resharded(sdk::SavedStates& saved) override;

 private:
  void outer_step();

  sdk::Communicator& comm_;  // the backend, or its view running gradsweep's ring
  std::int64_t inner_steps_;
  OuterOptimizer outer_;
  sdk::LocalOptimizer inner_;
  FlatLayout layout_;
  torch::Tensor global_;         // the parameters every rank started this round from
  torch::Tensor local_;          // this rank's parameters after its inner steps so far
  std::int64_t round_step_ = 0;  // inner steps taken in the current round
};

}  // namespace gradsweep::strategies
