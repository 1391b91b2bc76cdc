#pragma once
// `powersgd`: data parallelism whose gradients travel as PowerSGD's rank-r factors (Vogels et al. 2019),
// as PyTorch's powerSGD_hook runs it (powersgd_compressor.hpp has the arithmetic).
//
// Per step, after backward: every matrix gradient of at least `min_compress_size` elements is compressed
// (P = M Q, P summed over ranks and orthogonalised, Q = M^T P summed and averaged, M ~ P Q^T) with this
// rank's residual fed into the next step; vectors and small tensors are summed uncompressed. All P's go
// in one allreduce, all Q's in another, the uncompressed tensors in a third, the three in flight
// together where they can be. Every rank then holds the same decompressed gradient and applies it with
// its own optimizer, so the ranks stay identical. For the first `start_step` steps the whole gradient is
// allreduced dense instead (the hook's start_powerSGD_iter): those steps are `ring`'s.
#include "algorithm_option.hpp"
#include "flat_layout.hpp"
#include "powersgd_compressor.hpp"

#include <gradsweep/sdk/optimizer.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include <array>
#include <optional>

namespace gradsweep::strategies {

inline constexpr std::array<sdk::OptionDecl, 5> kPowerSgdOptions{{
    {"rank", sdk::OptionType::Int, "2",
     "rank r of each matrix gradient's approximation P Q^T (>= 1; the paper's rank 2, PyTorch's default is 1)"},
    {"start_step", sdk::OptionType::Int, "10",
     "steps of dense allreduce before compression starts (the hook's start_powerSGD_iter; >= 0)"},
    {"min_compress_size", sdk::OptionType::Int, "1024",
     "matrices with fewer elements are allreduced uncompressed, as vectors always are (>= 0)"},
    {"seed", sdk::OptionType::Int, "0", "seed of the first random Q, the same on every rank"},
    {"algorithm", sdk::OptionType::String, "auto",
     "auto: ring on MPI, native on NCCL; ring: gradsweep's ring allreduce over point-to-point; hierarchical (MPI "
     "backend); native: the backend's",
     kAlgorithmChoices},
}};

class PowerSgdStrategy final : public sdk::Strategy {
 public:
  // Every rank applies the same step; the `algorithm` option's needs are checked per cell. Resumes at any
  // world size (on_load_resharded).
  static constexpr auto kCapabilities = sdk::StrategyCapabilities{}.agreeing().resharding();
  static void check_plan(const sdk::PlanFacts& facts, sdk::PlanAnswer& answer) {
    check_algorithm_plan(facts, answer, "powersgd");
  }

  explicit PowerSgdStrategy(const sdk::PluginContext& context);

 protected:
  void on_setup(const sdk::StrategySetup& setup) override;
  void on_begin_step(const sdk::StepContext& step) override;
  void on_end_backward() override;
  sdk::StepResult on_update(const sdk::StepContext& step) override;
  void on_save_state(torch::serialize::OutputArchive& archive) override;
  void on_load_state(torch::serialize::InputArchive& archive) override;
  void on_load_resharded(sdk::SavedStates& saved) override;

 private:
  void allreduce_dense();
  void allreduce_compressed();

  sdk::Communicator& comm_;
  PowerSgdSettings settings_;
  std::int64_t start_step_;
  sdk::LocalOptimizer optimizer_;
  std::optional<PowerSgdCompressor> compressor_;
  torch::Tensor flat_;  // this rank's gradient, then the decompressed mean
  std::int64_t step_ = 0;
};

}  // namespace gradsweep::strategies
