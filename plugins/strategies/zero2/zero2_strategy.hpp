#pragma once
// `zero2` and `zero2-amp`: ZeRO stage 2 (Rajbhandari et al. 2020). As `dps` (ZeRO-1), each rank updates
// 1/N of the parameters with an optimizer whose state covers that 1/N only; in addition no rank keeps a
// full-size gradient. Gradients are packed into fusion buckets as backward produces them, each parameter's
// .grad is freed the moment it is packed, and each complete bucket is reduce-scattered asynchronously so
// that a rank receives only its piece of it (shard_buckets.hpp says how buckets map to shards). After the
// update the parameters are all-gathered bucket by bucket. The traffic equals ring's and dps's.
#include "algorithm_option.hpp"
#include "mixed_precision.hpp"
#include "shard_buckets.hpp"

#include <gradsweep/sdk/optimizer.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include <array>
#include <deque>
#include <memory>
#include <optional>

namespace gradsweep::strategies {

inline constexpr std::array<sdk::OptionDecl, 4> kZero2Options{{
    {"algorithm", sdk::OptionType::String, "native",
     "native: the backend's reduce-scatter and all-gather; ring: gradsweep's ring over point-to-point; "
     "hierarchical: the ring's reduce-scatter and all-gather, the gradient norm's allreduce hierarchical",
     kAlgorithmChoices},
    {"bucket_mb", sdk::OptionType::Float, "25", "fusion bucket size in MiB; each bucket is sharded over the ranks"},
    {"first_bucket_mb", sdk::OptionType::Float, "1", "size cap of the first bucket, the first to complete in backward"},
    {"overlap", sdk::OptionType::Bool, "true",
     "start each bucket's reduce-scatter during backward (false: all after backward, for comparison)"},
}};

class Zero2Strategy : public sdk::Strategy {
 public:
  static constexpr auto kCapabilities =
      sdk::StrategyCapabilities{}.exact().agreeing().needs(sdk::kAsyncCollectives).resharding();
  static void check_plan(const sdk::PlanFacts& facts, sdk::PlanAnswer& answer, const char* name) {
    check_algorithm_plan(facts, answer, name);
  }

  Zero2Strategy(const sdk::PluginContext& context, MixedPrecision precision, const char* name);

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
  // Copies parameter i's gradient into its bucket and frees the gradient.
  void pack(std::size_t i);
  // Reduce-scatters every complete bucket not yet launched, in bucket order.
  void launch_ready();
  // Waits for the oldest reduce-scatter in flight and frees its bucket.
  void complete_oldest();
  // The update's all-gather of the parameters, bucket by bucket.
  void gather_parameters();

  std::string name_;
  MixedPrecision amp_;
  sdk::Communicator& comm_;  // the backend, or its view running gradsweep's ring
  double bucket_mb_, first_bucket_mb_;
  bool overlap_;
  std::vector<torch::Tensor> params_;
  sdk::OptimizerSpec spec_;
  std::optional<ShardBuckets> buckets_;
  std::vector<char> packed_;  // parameter -> packed this step
  std::size_t next_launch_ = 0;
  std::deque<std::size_t> in_flight_;        // buckets being reduce-scattered, oldest first
  torch::Tensor grad_shard_;                 // this rank's pieces of every bucket, summed over ranks (wire dtype)
  torch::Tensor master_grad_;                // the same in float32, averaged (and unscaled): the slices' .grad view it
  std::vector<torch::Tensor> owned_values_;  // views of the parameters' storage, per ShardBuckets::owned()
  sdk::SlicedOptimizer optimizer_;
  std::int64_t bucket_bytes_live_ = 0, bucket_bytes_peak_ = 0;
  std::int64_t step_ = 0;
};

}  // namespace gradsweep::strategies
