#include "hsdp_strategy.hpp"

#include "unit_parameters.hpp"

#include <gradsweep/sdk/model_optimizer_state.hpp>

#include <torch/torch.h>

#include <algorithm>
#include <numeric>
#include <string>

namespace gradsweep::strategies {

void HsdpStrategy::check_plan(const sdk::PlanFacts& facts, sdk::PlanAnswer& answer) {
  if (facts.ranks_per_node < 1 || facts.nodes < 1 || facts.nodes * facts.ranks_per_node != facts.world_size) {
    answer.about = "ranks";
    answer.refusal =
        "strategy 'hsdp' shards over each node's ranks and replicates the shards across nodes, so every "
        "node needs as many ranks: " +
        std::to_string(facts.world_size) + " ranks are not " + std::to_string(facts.nodes) + " node(s) of " +
        std::to_string(facts.ranks_per_node);
    return;
  }
  if (facts.options->flag("prefetch") && (facts.backend_features & sdk::kAsyncCollectives) == 0) {
    answer.about = "prefetch";
    answer.refusal = std::string(
                         "strategy 'hsdp': prefetch starts the next unit's all-gather with allgather_async, "
                         "and the ") +
                     facts.backend + " backend offers no asynchronous collectives; set prefetch: false";
  }
}

HsdpStrategy::HsdpStrategy(const sdk::PluginContext& context)
    : Strategy(context), prefetch_(context.options.flag("prefetch")) {}

// The planner judged the cell by its declared nodes; the job's own nodes (the backend's node split) are
// checked here, where every rank sees them: a node with fewer ranks would hold shards no other node has.
void HsdpStrategy::make_groups() {
  sdk::Communicator& comm = context().comm;
  node_ = sdk::collective::group(comm, sdk::GroupKind::Node);
  across_ = sdk::collective::group(comm, sdk::GroupKind::AcrossNodes);
  torch::Tensor sizes = torch::tensor({static_cast<double>(node_->size()), -static_cast<double>(node_->size())});
  sdk::collective::allreduce(comm, sizes, sdk::ReduceOp::Max);
  const int most = static_cast<int>(sizes[0].item<double>()), fewest = static_cast<int>(-sizes[1].item<double>());
  if (most != fewest)
    throw sdk::Error("hsdp: the job's nodes have unequal numbers of ranks (from " + std::to_string(fewest) + " to " +
                     std::to_string(most) + "); hsdp replicates each node's shards on every node, so every node " +
                     "needs as many ranks");
  context().log.info("hsdp: " + std::to_string(across_->size()) + " node(s) of " + std::to_string(node_->size()) +
                     " rank(s): parameters sharded over the node, replicated across nodes" +
                     (prefetch_ ? ", next unit prefetched" : ""));
}

void HsdpStrategy::on_setup(const sdk::StrategySetup& setup) {
  make_groups();
  spec_ = setup.optimizer;
  params_ = sdk::tensors_of(setup.parameters);
  if (setup.units.empty())
    context().log.warn(
        "the model declares no units, so it runs as one unit: sharded at rest, the whole model gathered for "
        "each forward and backward (peak parameter memory = the model plus 1/K of it, K ranks per node)");
  auto groups = unit_parameters(setup);
  declared_ = setup.units.size();
  has_root_ = !groups.back().empty();
  if (!has_root_) groups.pop_back();
  for (std::size_t u = 0; u < groups.size(); ++u) {
    const bool root = u == declared_;
    if (groups[u].empty()) throw sdk::Error("hsdp: unit '" + setup.units[u].name + "' has no parameters");
    std::vector<torch::Tensor> members;
    for (std::size_t i : groups[u]) members.push_back(params_[i]);
    units_.emplace_back(root ? "root" : setup.units[u].name, std::move(members), std::move(groups[u]), node_->rank(),
                        node_->size());
    resident_bytes_ += units_.back().shard_bytes();
  }
  peak_bytes_ = resident_bytes_;
  order_.resize(declared_);
  std::iota(order_.begin(), order_.end(), std::size_t{0});  // until a forward shows the model's order
  std::vector<torch::Tensor> tensors;
  std::vector<sdk::OptimizerSlice> slices;
  for (const ShardedUnit& u : units_) u.add_optimizer_slices(tensors, slices);
  optimizer_ = sdk::make_sliced_optimizer(spec_, tensors, slices, params_);
}

ShardedUnit& HsdpStrategy::unit_of(std::size_t event_unit) {
  return event_unit == sdk::kRootUnit ? units_.back() : units_.at(event_unit);
}

void HsdpStrategy::gather(ShardedUnit& u) {
  const bool allocated = u.gathered();
  u.gather(*node_);  // waits for the unit's prefetch, if one is in flight
  if (allocated) return;
  resident_bytes_ += u.full_bytes();
  peak_bytes_ = std::max(peak_bytes_, resident_bytes_);
}

void HsdpStrategy::prefetch(ShardedUnit& u) {
  if (!prefetch_ || u.gathered()) return;
  u.prefetch(*node_);
  resident_bytes_ += u.full_bytes();
  peak_bytes_ = std::max(peak_bytes_, resident_bytes_);
}

void HsdpStrategy::release(ShardedUnit& u) {
  if (!u.gathered()) return;
  u.release();
  resident_bytes_ -= u.full_bytes();
}

void HsdpStrategy::release_all() {
  for (ShardedUnit& u : units_) release(u);
}

// A unit the last forward did not run has no next: nothing is prefetched after it.
void HsdpStrategy::prefetch_next(std::size_t unit, bool backward) {
  const auto at = std::find(order_.begin(), order_.end(), unit);
  if (at == order_.end()) return;
  if (backward && at != order_.begin()) prefetch(units_.at(*(at - 1)));
  if (!backward && at + 1 != order_.end()) prefetch(units_.at(*(at + 1)));
}

void HsdpStrategy::on_begin_step(const sdk::StepContext& /*step*/) {
  for (ShardedUnit& u : units_) u.gradient_shard().zero_();
}

// Reduce-scatter inside the node, then the shard's allreduce across nodes, started now and waited for
// at the end of backward, so that it overlaps the backward of the units still to come.
void HsdpStrategy::reduce_gradients(ShardedUnit& u) {
  u.reduce_gradients(*node_);
  if (across_->size() == 1) return;
  if ((across_->features() & sdk::kAsyncCollectives) != 0)
    across_pending_.push_back(sdk::collective::allreduce_async(*across_, u.gradient_shard()));
  else
    sdk::collective::allreduce(*across_, u.gradient_shard());
}

void HsdpStrategy::on_unit_event(const sdk::UnitEvent& event) {
  const bool root = event.unit == sdk::kRootUnit;
  switch (event.phase) {
    case sdk::UnitPhase::ForwardBegin:
      if (root) {
        if (has_root_) gather(units_.back());
        this_order_.clear();
        if (!order_.empty()) prefetch(units_.at(order_.front()));
      } else {
        this_order_.push_back(event.unit);
        gather(unit_of(event.unit));
        prefetch_next(event.unit, false);
      }
      break;
    case sdk::UnitPhase::ForwardEnd:
      if (!root) {
        release(unit_of(event.unit));
        break;
      }
      if (!this_order_.empty()) order_ = this_order_;
      // The root stays for backward: its parameters (the tied head) are used at both ends of the model.
      if (!event.training) release_all();
      break;
    case sdk::UnitPhase::BackwardBegin:
      if (root) {
        if (has_root_) gather(units_.back());
        if (!order_.empty()) prefetch(units_.at(order_.back()));
      } else {
        gather(unit_of(event.unit));
        prefetch_next(event.unit, true);
      }
      break;
    case sdk::UnitPhase::BackwardEnd:
      if (root && !has_root_) break;
      if (event.last_micro_batch) reduce_gradients(unit_of(event.unit));
      release(unit_of(event.unit));
      break;
  }
}

void HsdpStrategy::on_end_backward() {
  release_all();
  for (auto& request : across_pending_) sdk::collective::wait(request);
  across_pending_.clear();
}

sdk::StepResult HsdpStrategy::on_update(const sdk::StepContext& step) {
  // Each node's shards cover the model once: their squared norms, summed over the node, are the global one.
  const double norm = step_shards(units_, *node_, context().comm.size(), spec_, optimizer_, step.lr);

  context().metrics.record("param_bytes_resident", static_cast<double>(peak_bytes_));
  context().metrics.record("optimizer_state_bytes",
                           static_cast<double>(sdk::optimizer_state_bytes(*optimizer_.optimizer)));
  peak_bytes_ = resident_bytes_;
  return {true, norm};
}

void HsdpStrategy::on_hold_parameters(bool hold) {
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

// The shards' layout depends on the node size: recorded, so that a resume on other nodes is refused by
// name (same world size) or resharded from one old node's ranks (another world size).
void HsdpStrategy::on_save_state(torch::serialize::OutputArchive& archive) {
  optimizer_.save(archive);
  archive.write("hsdp_node_size", torch::tensor({static_cast<std::int64_t>(node_->size())}));
}

void HsdpStrategy::on_load_state(torch::serialize::InputArchive& archive) {
  torch::Tensor saved;
  if (archive.try_read("hsdp_node_size", saved) && saved.item<std::int64_t>() != node_->size())
    throw sdk::Error("hsdp: the checkpoint's optimizer state is sharded over nodes of " +
                     std::to_string(saved.item<std::int64_t>()) + " rank(s), this job's nodes have " +
                     std::to_string(node_->size()) + "; resume with the same ranks per node");
  optimizer_.load(archive);
}

// The host restored the whole parameters under hold_parameters, whose release made them this rank's new
// shards: only the moments are left to carry over, from the ranks of the old job's first node, whose
// shards hold the model once (the other nodes hold copies).
void HsdpStrategy::on_load_resharded(sdk::SavedStates& saved) {
  torch::Tensor node_size;
  std::int64_t old_node = saved.world_size();
  if (sdk::saved_state(saved, 0).try_read("hsdp_node_size", node_size)) old_node = node_size.item<std::int64_t>();
  std::vector<int> ranks(static_cast<std::size_t>(std::min<std::int64_t>(old_node, saved.world_size())));
  std::iota(ranks.begin(), ranks.end(), 0);
  sdk::ModelOptimizerState(saved, ranks, spec_, params_).restore(optimizer_);
}

}  // namespace gradsweep::strategies
