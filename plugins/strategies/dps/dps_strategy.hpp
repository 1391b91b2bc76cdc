#pragma once
// `dps` and `dps-amp`: the distributed (sharded) parameter server of Bai 2022, which is ZeRO stage 1.
//
// Every rank serves 1/N of the flat parameter vector: gradients are reduce-scattered so that each rank
// receives the sum for its shard only, the rank updates its shard with an optimizer whose state covers
// that shard alone (optimizer memory per rank falls as 1/N), and the updated shards are all-gathered so
// every rank holds the whole model for the next forward. The traffic equals a ring allreduce's
// (reduce-scatter + all-gather); the saving is memory.
#include "flat_layout.hpp"
#include "algorithm_option.hpp"
#include "mixed_precision.hpp"

#include <gradsweep/sdk/capabilities.hpp>
#include <gradsweep/sdk/optimizer.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include <array>
#include <memory>

namespace gradsweep::strategies {

inline constexpr std::array<sdk::OptionDecl, 1> kDpsOptions{{
    {"algorithm", sdk::OptionType::String, "native",
     "native: the backend's reduce-scatter and all-gather; ring: gradsweep's ring over point-to-point; "
     "hierarchical: the ring's reduce-scatter and all-gather, the gradient norm's allreduce hierarchical",
     kAlgorithmChoices},
}};

class DpsStrategy : public sdk::Strategy {
 public:
  static constexpr auto kCapabilities = sdk::StrategyCapabilities{}.exact().agreeing().resharding();
  static void check_plan(const sdk::PlanFacts& facts, sdk::PlanAnswer& answer, const char* name) {
    check_algorithm_plan(facts, answer, name);
  }

  DpsStrategy(const sdk::PluginContext& context, MixedPrecision precision, const char* name);

 protected:
  sdk::PrecisionPolicy on_precision() override { return {amp_.compute_dtype()}; }
  double on_loss_scale() override { return amp_.loss_scale(); }
  void on_setup(const sdk::StrategySetup& setup) override;
  void on_begin_step(const sdk::StepContext& step) override;
  void on_end_backward() override;
  sdk::StepResult on_update(const sdk::StepContext& step) override;
  void on_save_state(torch::serialize::OutputArchive& archive) override;
  void on_load_state(torch::serialize::InputArchive& archive) override;
  void on_load_resharded(sdk::SavedStates& saved) override;

 private:
  // The part of one parameter that falls in this rank's shard.
  struct OwnedSlice {
    std::int64_t flat_offset;  // where it starts in the flat parameter vector
    torch::Tensor values;      // a view of the parameter's own storage: the optimizer updates it in place
  };

  MixedPrecision amp_;
  sdk::Communicator& comm_;
  std::vector<torch::Tensor> params_;
  sdk::OptimizerSpec spec_;
  FlatLayout layout_;
  std::int64_t shard_ = 0;  // elements per rank (the flat vector is padded to N shards)
  std::int64_t shard_begin_ = 0;
  torch::Tensor grads_;        // N shards of gradients, in the wire dtype
  torch::Tensor grad_shard_;   // this rank's summed shard, wire dtype
  torch::Tensor master_grad_;  // the same in float32, unscaled and averaged: the slices' .grad view it
  torch::Tensor gathered_;     // N shards of parameters, float32
  std::vector<OwnedSlice> owned_;
  sdk::SlicedOptimizer optimizer_;
  std::int64_t step_ = 0;
};

}  // namespace gradsweep::strategies
