#pragma once
// `ps` and `ps-amp`: a single parameter server (Bai's SPS; the asynchronous baseline of Xiao et al.).
//
// Rank 0 is the server: it holds the master parameters and the whole optimizer. The other computing
// ranks are workers: each step they push their gradient to the server and pull the parameters back.
//
//   mode: sync    the server waits for every worker's gradient, averages them (with its own when it
//                 computes) and applies one update: the same result as `single` at the global batch.
//   mode: async   the server applies each worker's gradient alone, in the order they arrive (any
//                 source), and answers that worker with the parameters as they are now. A gradient
//                 computed on parameters k updates behind is k stale: the server records it.
//
// All traffic goes through the server's links, which is what limits a parameter server: each worker
// moves its gradient up and the parameters down every step (recorded as ps_push_bytes/ps_pull_bytes).
// The protocol, shared with `sampled`, is common/parameter_server_protocol.hpp.
#include "flat_layout.hpp"
#include "mixed_precision.hpp"
#include "parameter_server_protocol.hpp"

#include <gradsweep/sdk/capabilities.hpp>
#include <gradsweep/sdk/optimizer.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include <array>
#include <vector>

namespace gradsweep::strategies {

inline constexpr std::array<sdk::OptionDecl, 2> kPsOptions{{
    {"mode", sdk::OptionType::String, "sync", "sync: one averaged update per step; async: one update per gradient",
     "sync|async"},
    {"server_computes", sdk::OptionType::Bool, "true",
     "the server rank also computes gradients (false: it only serves, and the batch is split over the workers)"},
}};

class PsStrategy : public sdk::Strategy {
 public:
  // In mode sync, float32; check_plan narrows it for mode async. Resumes at any world size (on_load_resharded).
  static constexpr auto kCapabilities =
      sdk::StrategyCapabilities{}.exact().agreeing().needs(sdk::kPointToPoint).resharding();
  // Refuses a server without workers and async on a backend without recv_any; a server that only
  // serves leaves one rank out of the batch split.
  static void check_plan(const sdk::PlanFacts& facts, sdk::PlanAnswer& answer, const char* name);

  PsStrategy(const sdk::PluginContext& context, MixedPrecision precision, const char* name);

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
  bool server() const { return protocol_.server(); }
  // The server's own gradient into sum_ (float32), with the test hook's overflow when asked for.
  void pack_own_gradient();
  // Applies `grads` (float32, summed over `count` gradients computed at loss scale `scale`) to the
  // master parameters, unless they overflowed. Returns what the step did.
  sdk::StepResult apply(const torch::Tensor& grads, double count, double scale, const sdk::StepContext& step);
  sdk::StepResult receive_parameters();

  std::string name_;
  MixedPrecision amp_;
  sdk::Communicator& comm_;
  ParameterServerProtocol protocol_;
  bool computes_;
  sdk::LocalOptimizer optimizer_;  // on the server only
  FlatLayout layout_;
  torch::Tensor push_;  // gradient on the wire (wire dtype)
  torch::Tensor sum_;   // the server's float32 accumulator
  torch::Tensor pull_;  // parameters on the wire (float32)
  std::int64_t step_ = 0;
};

}  // namespace gradsweep::strategies
