#pragma once
// The optimizer state of a job of another world size, taken over (Strategy::on_load_resharded). Compiled
// into each plugin (header-only).
//
// Each rank's SlicedOptimizer (optimizer.hpp) saved LibTorch's own optimizer state and where each of its
// tensors lies in the model (OptimizerSlice). ModelOptimizerState reads the old ranks' maps and states
// back into per-element state of every whole parameter (AdamW's moments and step, SGD's momentum), from
// which restore() cuts this rank's slices. Saving costs nothing beyond each rank's own write; the old
// shards are read only when resharding.
#include <gradsweep/sdk/optimizer.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace gradsweep::sdk {

// The per-element optimizer state of every model parameter, put together from old ranks' archives.
class ModelOptimizerState {
 public:
  // `ranks`: the old ranks whose archives to read: all of them where each held a shard, {0} where every
  // rank held the same state. Throws, naming the parameter, when they do not cover a parameter whole.
  ModelOptimizerState(SavedStates& saved, const std::vector<int>& ranks, const OptimizerSpec& spec,
                      const std::vector<torch::Tensor>& parents)
      : spec_(spec), fields_(parents.size()), steps_(parents.size(), 0), covered_(parents.size(), 0) {
    for (const int rank : ranks) read_rank(saved_state(saved, rank), rank, parents);
    // All or nothing: a strategy that saved state of some parameters must have saved all of each.
    const bool any = std::any_of(covered_.begin(), covered_.end(), [](std::int64_t n) { return n != 0; });
    for (std::size_t p = 0; p < parents.size() && any; ++p)
      if (covered_[p] != parents[p].numel())
        throw Error("the saved optimizer state covers " + std::to_string(covered_[p]) + " of the " +
                    std::to_string(parents[p].numel()) + " elements of parameter " + std::to_string(p));
  }

  // Gives `optimizer` the state of its tensors, which lie at `slices` (SlicedOptimizer's order).
  void restore(SlicedOptimizer& target) const {
    std::size_t i = 0;
    for (auto& group : target.optimizer->param_groups())
      for (auto& tensor : group.params()) {
        const OptimizerSlice& s = target.slices.at(i++);
        const auto& fields = fields_.at(static_cast<std::size_t>(s.param));
        if (fields.empty()) continue;  // no state yet (saved before the first step)
        auto cut = [&](const char* name) {
          const auto found = fields.find(name);
          if (found == fields.end()) return torch::Tensor();
          return found->second.narrow(0, s.offset, s.numel).view(tensor.sizes()).to(tensor.device()).clone();
        };
        target.optimizer->state()[tensor.unsafeGetTensorImpl()] = make_state(cut, steps_[s.param]);
      }
  }

  // The element-wise state of parameter `param` under `field` ("exp_avg", "exp_avg_sq",
  // "momentum_buffer"), flattened; undefined when it has none.
  torch::Tensor field(std::size_t param, const std::string& name) const {
    const auto found = fields_.at(param).find(name);
    return found == fields_.at(param).end() ? torch::Tensor() : found->second;
  }

 private:
  using Fields = std::map<std::string, torch::Tensor>;

  // Rebuilds the old rank's optimizer over stand-ins shaped like its slices, loads its state with
  // LibTorch's own reader, and copies each slice's state into the whole parameters'.
  void read_rank(torch::serialize::InputArchive& archive, int rank, const std::vector<torch::Tensor>& parents) {
    torch::Tensor map;
    if (!archive.try_read("optimizer_slices", map))
      throw Error("old rank " + std::to_string(rank) + "'s state has no optimizer_slices: it was saved by a strategy " +
                  "that does not record where its optimizer state lies");
    std::vector<torch::Tensor> stand_ins;
    std::vector<OptimizerSlice> slices;
    auto rows = map.accessor<std::int64_t, 2>();
    for (std::int64_t i = 0; i < map.size(0); ++i) {
      const OptimizerSlice s{rows[i][0], rows[i][1], rows[i][2]};
      if (s.param < 0 || s.param >= static_cast<std::int64_t>(parents.size()) || s.offset < 0 ||
          s.offset + s.numel > parents[static_cast<std::size_t>(s.param)].numel())
        throw Error("old rank " + std::to_string(rank) + "'s optimizer slice " + std::to_string(i) +
                    " does not fit this model (parameter " + std::to_string(s.param) + ", elements " +
                    std::to_string(s.offset) + "+" + std::to_string(s.numel) + ")");
      slices.push_back(s);
      stand_ins.push_back(torch::zeros({s.numel}));
    }
    SlicedOptimizer old = make_sliced_optimizer(spec_, stand_ins, slices, parents);
    old.optimizer->load(archive);
    std::size_t i = 0;
    for (auto& group : old.optimizer->param_groups())
      for (auto& tensor : group.params()) take(old.slices.at(i++), old.optimizer->state(), tensor, parents);
  }

  template <typename State>
  void take(const OptimizerSlice& s, const State& states, const torch::Tensor& stand_in,
            const std::vector<torch::Tensor>& parents) {
    const auto found = states.find(stand_in.unsafeGetTensorImpl());
    const auto p = static_cast<std::size_t>(s.param);
    covered_[p] += s.numel;
    if (found == states.end()) return;
    auto put = [&](const char* name, const torch::Tensor& value) {
      if (!value.defined()) return;
      torch::Tensor& whole = fields_[p][name];
      if (!whole.defined()) whole = torch::zeros({parents[p].numel()}, value.options().device(torch::kCPU));
      whole.narrow(0, s.offset, s.numel).copy_(value.reshape(-1));
    };
    if (const auto* adam = dynamic_cast<const torch::optim::AdamWParamState*>(found->second.get())) {
      put("exp_avg", adam->exp_avg());
      put("exp_avg_sq", adam->exp_avg_sq());
      put("max_exp_avg_sq", adam->max_exp_avg_sq());
      steps_[p] = std::max(steps_[p], adam->step());
    } else if (const auto* sgd = dynamic_cast<const torch::optim::SGDParamState*>(found->second.get())) {
      put("momentum_buffer", sgd->momentum_buffer());
    }
  }

  template <typename Cut>
  std::unique_ptr<torch::optim::OptimizerParamState> make_state(Cut&& cut, std::int64_t step) const {
    if (spec_.kind == OptimizerSpec::Kind::AdamW) {
      auto state = std::make_unique<torch::optim::AdamWParamState>();
      state->step(step);
      state->exp_avg(cut("exp_avg"));
      state->exp_avg_sq(cut("exp_avg_sq"));
      if (torch::Tensor m = cut("max_exp_avg_sq"); m.defined()) state->max_exp_avg_sq(m);
      return state;
    }
    auto state = std::make_unique<torch::optim::SGDParamState>();
    state->momentum_buffer(cut("momentum_buffer"));
    return state;
  }

  OptimizerSpec spec_;
  std::vector<Fields> fields_;
  std::vector<std::int64_t> steps_;
  std::vector<std::int64_t> covered_;
};

}  // namespace gradsweep::sdk
