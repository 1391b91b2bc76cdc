#pragma once
// `topk`: data parallelism that sends, per step, only the largest `ratio_percent` % of each tensor's
// accumulated gradient, as Deep Gradient Compression does (Lin et al., ICLR 2018; dgc_compressor.hpp).
//
// After backward each rank clips its own gradient (DGC's local clipping, threshold grad_clip / sqrt(N)),
// applies momentum correction and accumulation, and selects its K coordinates. Values and indices are
// all-gathered (every rank sends the same K, so the sizes match), every rank adds the N sparse parts in
// rank order and divides by N, and applies that with its own optimizer: all ranks apply the same update
// and stay identical. What was not sent stays in the rank's accumulation (error feedback).
//
// DGC's momentum lives in the strategy, so the experiment's optimizer should be plain SGD (train.optimizer
// sgd, train.momentum 0): a momentum SGD would apply momentum twice, and AdamW rescales the accumulated
// velocity per coordinate. Both still run (a warning says so); `momentum: 0` gives plain top-k with
// error feedback, which suits any optimizer.
#include "algorithm_option.hpp"
#include "dgc_compressor.hpp"

#include <gradsweep/sdk/optimizer.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include <array>
#include <optional>

namespace gradsweep::strategies {

inline constexpr std::array<sdk::OptionDecl, 4> kTopkOptions{{
    {"ratio_percent", sdk::OptionType::Float, "1",
     "percent of each tensor's elements sent per step, in (0, 100]; at least one element per tensor"},
    {"momentum", sdk::OptionType::Float, "0.9",
     "DGC's local momentum (momentum correction), in [0, 1); use with train.optimizer sgd and train.momentum 0"},
    {"warmup_steps", sdk::OptionType::Int, "0",
     "dense steps (momentum-corrected gradient allreduced whole) before sparsification starts (>= 0)"},
    {"algorithm", sdk::OptionType::String, "auto",
     "auto: ring on MPI, native on NCCL; ring: gradsweep's ring over point-to-point; hierarchical (MPI backend); "
     "native: the backend's collectives",
     kAlgorithmChoices},
}};

class TopkStrategy final : public sdk::Strategy {
 public:
  // Every rank applies the same step; the `algorithm` option's needs are checked per cell. Resumes at any
  // world size (on_load_resharded).
  static constexpr auto kCapabilities = sdk::StrategyCapabilities{}.agreeing().resharding();
  static void check_plan(const sdk::PlanFacts& facts, sdk::PlanAnswer& answer) {
    check_algorithm_plan(facts, answer, "topk");
  }

  explicit TopkStrategy(const sdk::PluginContext& context);

 protected:
  void on_setup(const sdk::StrategySetup& setup) override;
  void on_begin_step(const sdk::StepContext& step) override;
  void on_end_backward() override;
  sdk::StepResult on_update(const sdk::StepContext& step) override;
  void on_save_state(torch::serialize::OutputArchive& archive) override;
  void on_load_state(torch::serialize::InputArchive& archive) override;
  void on_load_resharded(sdk::SavedStates& saved) override;

 private:
  void clip_locally();
  void exchange_sparse();

  sdk::Communicator& comm_;
  double ratio_percent_, momentum_;
  std::int64_t warmup_steps_;
  double grad_clip_ = 0.0;
  sdk::LocalOptimizer optimizer_;  // built without clipping: the strategy clips each rank's own gradient
  std::optional<DgcCompressor> compressor_;
  torch::Tensor flat_;                      // this rank's gradient, then the applied mean
  torch::Tensor values_, indices_;          // this rank's K selected entries
  torch::Tensor all_values_, all_indices_;  // every rank's, rank-major
  std::int64_t step_ = 0;
};

}  // namespace gradsweep::strategies
