#pragma once
// `ring` and `ring-amp`: synchronous data parallelism by allreduce of gradients (Bai's Ring AllReduce;
// what Horovod and PyTorch DDP do). Every rank keeps all parameters and the whole optimizer and applies
// the same averaged gradient, so all ranks stay identical and the run reproduces `single` at the same
// global batch.
//
// Gradients are fused into buckets (bucket_mb) that are allreduced asynchronously as soon as they are
// complete during backward (common/gradient_buckets.hpp); `algorithm` picks gradsweep's own ring over
// point-to-point, its hierarchical (node-aware) allreduce, or the backend's native allreduce.
#include "gradient_buckets.hpp"
#include "algorithm_option.hpp"
#include "mixed_precision.hpp"

#include <gradsweep/sdk/capabilities.hpp>
#include <gradsweep/sdk/optimizer.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include <array>
#include <memory>
#include <optional>

namespace gradsweep::strategies {

inline constexpr std::array<sdk::OptionDecl, 4> kRingOptions{{
    {"algorithm", sdk::OptionType::String, "auto",
     "auto: ring on MPI, native on NCCL; ring: gradsweep's ring allreduce over point-to-point; hierarchical: "
     "intra-node reduce-scatter, "
     "inter-node allreduce, intra-node all-gather (MPI backend); native: the backend's own allreduce",
     kAlgorithmChoices},
    {"bucket_mb", sdk::OptionType::Float, "25", "fusion bucket size in MiB (Horovod's and DDP's default is 25)"},
    {"first_bucket_mb", sdk::OptionType::Float, "1",
     "size cap of the first bucket, the first to complete in backward (DDP's is 1 MiB)"},
    {"overlap", sdk::OptionType::Bool, "true",
     "start each bucket's allreduce during backward (false: all after backward, for comparison)"},
}};

class RingStrategy : public sdk::Strategy {
 public:
  // In float32; the -amp variant is not exact (strategy_variants.hpp). Its state is the same on every rank, so
  // it resumes at any world size (on_load_resharded).
  static constexpr auto kCapabilities =
      sdk::StrategyCapabilities{}.exact().agreeing().needs(sdk::kAsyncCollectives).resharding();
  static void check_plan(const sdk::PlanFacts& facts, sdk::PlanAnswer& answer, const char* name) {
    check_algorithm_plan(facts, answer, name);
  }

  RingStrategy(const sdk::PluginContext& context, MixedPrecision precision, const char* name);

 protected:
  sdk::PrecisionPolicy on_precision() override { return {amp_.compute_dtype()}; }
  double on_loss_scale() override { return amp_.loss_scale(); }
  void on_setup(const sdk::StrategySetup& setup) override;
  void on_begin_step(const sdk::StepContext& step) override;
  void on_gradient_ready(std::size_t index) override;
  void on_end_backward() override;
  sdk::StepResult on_update(const sdk::StepContext& step) override;
  void on_save_state(torch::serialize::OutputArchive& archive) override;
  void on_load_state(torch::serialize::InputArchive& archive) override;
  void on_load_resharded(sdk::SavedStates& saved) override;

 private:
  void launch(Bucket& bucket);

  std::string name_;
  MixedPrecision amp_;
  sdk::Communicator& comm_;  // the backend, or its view running gradsweep's ring
  double bucket_mb_, first_bucket_mb_;
  bool overlap_;
  sdk::LocalOptimizer optimizer_;
  std::optional<GradientBuckets> buckets_;
  std::int64_t step_ = 0;
};

}  // namespace gradsweep::strategies
