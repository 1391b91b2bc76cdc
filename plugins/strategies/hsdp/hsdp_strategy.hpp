#pragma once
// `hsdp`: hybrid sharded data parallel (PyTorch FSDP's HYBRID_SHARD, ZeRO++'s hpZ). Parameters, gradients
// and optimizer state are sharded over the ranks of a node (Communicator::group(GroupKind::Node)) and
// replicated across nodes, so the all-gathers a sharded model needs before each unit's forward and
// backward stay on the node's fast links; only the gradient shards cross nodes, once per step.
//
// Per step: before each unit's forward and backward its parameters are all-gathered inside the node, and
// the next unit's all-gather is started (allgather_async) while this one computes (prefetch: the next in
// forward order during forward, the previous during backward); after the unit's backward, on the last
// micro-batch, its gradient is reduce-scattered inside the node into this rank's shard, whose allreduce
// across nodes (group(AcrossNodes), one rank per node: the ones holding the same shard) starts at once and
// is waited for at the end of backward; the optimizer then updates the shard. The root unit (parameters in
// no unit) stays gathered from the start of forward to the end of backward, as under fsdp.
//
// Memory per rank: (model / node size) at rest, plus the root and, with prefetch, two units whole. One
// node: fsdp over the node. One rank per node: every rank holds the whole model and allreduces whole
// gradients (data parallel).
#include <gradsweep/sdk/optimizer.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include "sharded_unit.hpp"

#include <array>
#include <memory>
#include <vector>

namespace gradsweep::strategies {

inline constexpr std::array<sdk::OptionDecl, 1> kHsdpOptions{{
    {"prefetch", sdk::OptionType::Bool, "true",
     "start the next unit's all-gather (allgather_async inside the node) while the current unit computes; "
     "costs one more unit's memory, needs asynchronous collectives"},
}};

class HsdpStrategy final : public sdk::Strategy {
 public:
  // Every rank applies the same step (the replicas of a shard get the same allreduced gradient).
  static constexpr auto kCapabilities =
      sdk::StrategyCapabilities{}.exact().agreeing().resharding().units().needs(sdk::kGroups);
  // Refuses nodes of unequal rank counts (a shard per node rank must exist on every node) and prefetch on
  // a backend without asynchronous collectives.
  static void check_plan(const sdk::PlanFacts& facts, sdk::PlanAnswer& answer);

  explicit HsdpStrategy(const sdk::PluginContext& context);

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
  void make_groups();
  ShardedUnit& unit_of(std::size_t event_unit);  // kRootUnit: the root
  void gather(ShardedUnit& u);
  void prefetch(ShardedUnit& u);
  void release(ShardedUnit& u);
  // Starts the all-gather of the unit that follows `unit` in forward order (backward: precedes it).
  void prefetch_next(std::size_t unit, bool backward);
  void reduce_gradients(ShardedUnit& u);
  void release_all();

  bool prefetch_ = true;
  std::unique_ptr<sdk::Group> node_, across_;
  sdk::OptimizerSpec spec_;
  std::vector<torch::Tensor> params_;  // the model's parameters (shapes only: their storage is the units')
  std::vector<ShardedUnit> units_;     // the declared units in order, then the root (if any parameter is in none)
  bool has_root_ = true;
  std::size_t declared_ = 0;             // declared units (units_ without the root)
  std::vector<std::size_t> order_;       // declared units in the order the last whole forward ran them
  std::vector<std::size_t> this_order_;  // the current forward's so far
  std::vector<std::unique_ptr<sdk::Request>> across_pending_;  // gradient shards' allreduces in flight
  sdk::SlicedOptimizer optimizer_;
  std::int64_t resident_bytes_ = 0;  // shards plus gathered (or gathering) units, now
  std::int64_t peak_bytes_ = 0;      // its maximum since the last update
};

}  // namespace gradsweep::strategies
