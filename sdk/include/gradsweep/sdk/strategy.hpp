#pragma once
// The Strategy interface: how gradients are shared and the update applied.
//
// The trainer owns the loop; a strategy is called at fixed points of each step:
//
//   begin_step                      before the first micro-batch (zero gradients, start prefetches)
//   output_vocabulary               the step's global batch; may restrict the softmax (sampled softmax)
//   [forward, backward] x micro     the trainer runs them, under precision() and scaled by loss_scale()
//     gradient_ready(i)             during the last micro-batch's backward, as each parameter's gradient
//                                   is final: start communicating it (overlap with the rest of backward)
//   end_backward                    after the last backward: finish communication
//   update                          apply the optimizer (locally, on a server, or on a shard)
//
// SDK 1.4 adds unit events inside forward and backward (see UnitEvent) and hold_parameters around the
// host's own reads and writes of the parameters (checkpoints). SDK 1.7 adds load_resharded: taking over
// the state a job of another world size saved (docs/howto/resume-at-another-size.md).
//
// `ModelAbi` explains the Abi/author split used here too.
#include <gradsweep/sdk/model.hpp>
#include <gradsweep/sdk/optimizer_spec.hpp>
#include <gradsweep/sdk/services.hpp>
#include <gradsweep/sdk/status.hpp>

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace gradsweep::sdk {

// What the forward and backward passes run in. The trainer applies it; strategies only ask.
struct PrecisionPolicy {
  // Autocast compute type: Float means none; BFloat16 / Half enable autocast on the model's device.
  torch::ScalarType compute_dtype = torch::kFloat;
};

struct StrategySetup {
  std::vector<Parameter> parameters;
  OptimizerSpec optimizer;
  std::int64_t micro_batches_per_step = 1;
  // ---- ABI 1.2 (appended: plugins built against 1.0/1.1 read only the fields above) ----
  ModelInfo model;
  // How often each token id occurs in the training shard, (vocab_size,) int64 on the CPU: what a
  // strategy that samples the vocabulary draws its unigram distribution from.
  torch::Tensor token_counts;
  // ---- ABI 1.4 ----
  // The model's declared units (ModelUnit); empty when it declares none or was built before 1.4. Every
  // parameter in no unit belongs to the root unit.
  std::vector<ModelUnit> units;
};

// ---- ABI 1.4: unit events ----
// The root unit's index in UnitEvent: the parameters in no declared unit.
inline constexpr std::size_t kRootUnit = static_cast<std::size_t>(-1);

enum class UnitPhase : std::uint32_t {
  ForwardBegin = 0,   // the unit's parameters are about to be used in a forward pass
  ForwardEnd = 1,     // the unit's forward is done (training: its backward will need the parameters again)
  BackwardBegin = 2,  // the gradient of the unit's output is computed; its backward is next
  BackwardEnd = 3,    // every parameter of the unit has its gradient of this micro-batch accumulated
};

// What the host tells a 1.4 strategy in each micro-batch, in this order:
//   ForwardBegin(root), then per declared unit u in the model's forward: ForwardBegin(u), ForwardEnd(u);
//   ForwardEnd(root). Training only (evaluation stops here): BackwardBegin(root), then, as backward
//   reaches each unit, BackwardBegin(u) ... BackwardEnd(u) (gradient_ready of the unit's parameters comes
//   before its BackwardEnd on the last micro-batch), and BackwardEnd(root) last (or when the root's
//   gradients are all accumulated). Units that got no gradient get BackwardEnd when backward returns.
struct UnitEvent {
  UnitPhase phase = UnitPhase::ForwardBegin;
  std::size_t unit = kRootUnit;  // index into StrategySetup::units, or kRootUnit
  bool training = true;          // false in evaluation: no backward follows
  std::int64_t micro_batch = 0;  // index within the step (training)
  bool last_micro_batch = true;  // its backward makes the step's gradients final
};

struct StepContext {
  std::int64_t step = 0;  // 0-based index of the step being taken
  double lr = 0.0;        // learning rate for this step
};

// What this rank does in the job, as plugins built before 1.9 said it. From 1.9 the host reads neither
// field: who computes is PlanAnswer::computing_ranks (the lowest ranks serve), and whether the strategy
// hears unit events is StrategyCapabilities::unit_events, both declared before anything runs.
struct RankRole {
  bool computes = true;
  // ABI 1.4-1.8: the strategy acts on model units (StrategyCapabilities::unit_events from 1.9).
  bool unit_events = false;
};

// A step's whole global batch (every rank's part), on the CPU and identical on every rank, so a strategy
// can derive per-step choices from it that agree across ranks without a message.
struct StepBatch {
  std::int64_t step = 0;
  torch::Tensor inputs;   // (G, T) int64
  torch::Tensor targets;  // (G, T) int64
};

// The vocabulary rows the output softmax is restricted to for a step (sampled softmax). `rows` undefined
// means the full softmax. `log_q`, when defined, is subtracted from the logits of `rows` (see OutputSubset).
// The trainer re-indexes each micro-batch's targets into `rows`, which must therefore contain them all.
struct OutputVocabulary {
  torch::Tensor rows;   // (S,) int64, distinct ids
  torch::Tensor log_q;  // (S,) float, or undefined
};

// ---- ABI 1.7: resharding ----
// The strategy states that every rank of a job of another world size saved (one archive per old rank, as
// each wrote it in save_state), for load_resharded. Archives are read when first opened and held by the
// host until load_resharded returns.
class SavedStates {
 public:
  virtual int world_size() const noexcept = 0;  // how many ranks saved
  // Old rank `rank`'s archive; an error Status names the file that is missing or unreadable.
  virtual Status open(int rank, torch::serialize::InputArchive** out) noexcept = 0;

 protected:
  ~SavedStates() = default;
};

// Plugin-side convenience: the archive of old rank `rank`, or an exception naming what failed.
inline torch::serialize::InputArchive& saved_state(SavedStates& saved, int rank) {
  torch::serialize::InputArchive* archive = nullptr;
  check(saved.open(rank, &archive));
  return *archive;
}

struct StepResult {
  bool applied = true;     // false when the update was skipped (e.g. fp16 overflow)
  double grad_norm = 0.0;  // global gradient norm before clipping, when known
};

class StrategyAbi {
 public:
  virtual Status setup(const StrategySetup& setup) noexcept = 0;
  virtual Status precision(PrecisionPolicy* out) noexcept = 0;
  virtual Status loss_scale(double* out) noexcept = 0;
  virtual Status begin_step(const StepContext& step) noexcept = 0;
  virtual Status gradient_ready(std::size_t index) noexcept = 0;
  virtual Status end_backward() noexcept = 0;
  virtual Status update(const StepContext& step, StepResult* out) noexcept = 0;
  virtual Status save_state(torch::serialize::OutputArchive& archive) noexcept = 0;
  virtual Status load_state(torch::serialize::InputArchive& archive) noexcept = 0;
  // ---- ABI 1.1 (the host calls it only on plugins built against 1.1 or later) ----
  virtual Status role(RankRole* out) noexcept = 0;
  // ---- ABI 1.2 ----
  // Called after begin_step with the step's global batch; the answer restricts this step's training
  // loss (never evaluation) to some vocabulary rows.
  virtual Status output_vocabulary(const StepBatch& batch, OutputVocabulary* out) noexcept = 0;
  // ---- ABI 1.4 ----
  virtual Status unit_event(const UnitEvent& event) noexcept = 0;
  // true: the host is about to read or overwrite every parameter outside a forward pass (a checkpoint):
  // make them whole. false: it is done; the parameters' values (maybe restored) are the model's again.
  virtual Status hold_parameters(bool hold) noexcept = 0;
  // ---- ABI 1.7 ----
  // Instead of load_state, when the checkpoint was written by another number of ranks: set up this rank's
  // state from `saved` (after setup, with the model's parameters already restored from old rank 0). Only
  // called on a strategy whose capabilities say `reshards`.
  virtual Status load_resharded(SavedStates& saved) noexcept = 0;

 protected:
  ~StrategyAbi() = default;
};

class Strategy : public StrategyAbi {
 public:
  explicit Strategy(const PluginContext& context) : context_(context) {}
  virtual ~Strategy() = default;

 protected:
  virtual void on_setup(const StrategySetup& setup) = 0;
  virtual PrecisionPolicy on_precision() { return {}; }
  virtual double on_loss_scale() { return 1.0; }
  virtual void on_begin_step(const StepContext& step) = 0;
  virtual void on_gradient_ready(std::size_t /*index*/) {}
  virtual void on_end_backward() {}
  virtual StepResult on_update(const StepContext& step) = 0;
  virtual void on_save_state(torch::serialize::OutputArchive& archive) = 0;
  virtual void on_load_state(torch::serialize::InputArchive& archive) = 0;
  virtual RankRole on_role() { return {}; }
  virtual OutputVocabulary on_output_vocabulary(const StepBatch& /*batch*/) { return {}; }
  virtual void on_unit_event(const UnitEvent& /*event*/) {}
  virtual void on_hold_parameters(bool /*hold*/) {}
  // A strategy that declares `reshards` overrides it; the host never calls it on the others.
  virtual void on_load_resharded(SavedStates& /*saved*/) {
    throw Error("this strategy cannot load a checkpoint of another world size");
  }

  const PluginContext& context() const { return context_; }

 private:
  Status setup(const StrategySetup& s) noexcept final {
    return guard([&] { on_setup(s); });
  }
  Status precision(PrecisionPolicy* out) noexcept final {
    return guard([&] { *out = on_precision(); });
  }
  Status loss_scale(double* out) noexcept final {
    return guard([&] { *out = on_loss_scale(); });
  }
  Status begin_step(const StepContext& step) noexcept final {
    return guard([&] { on_begin_step(step); });
  }
  Status gradient_ready(std::size_t index) noexcept final {
    return guard([&] { on_gradient_ready(index); });
  }
  Status end_backward() noexcept final {
    return guard([&] { on_end_backward(); });
  }
  Status update(const StepContext& step, StepResult* out) noexcept final {
    return guard([&] { *out = on_update(step); });
  }
  Status save_state(torch::serialize::OutputArchive& archive) noexcept final {
    return guard([&] { on_save_state(archive); });
  }
  Status load_state(torch::serialize::InputArchive& archive) noexcept final {
    return guard([&] { on_load_state(archive); });
  }
  Status role(RankRole* out) noexcept final {
    return guard([&] { *out = on_role(); });
  }
  Status output_vocabulary(const StepBatch& batch, OutputVocabulary* out) noexcept final {
    return guard([&] { *out = on_output_vocabulary(batch); });
  }
  Status unit_event(const UnitEvent& event) noexcept final {
    return guard([&] { on_unit_event(event); });
  }
  Status hold_parameters(bool hold) noexcept final {
    return guard([&] { on_hold_parameters(hold); });
  }
  Status load_resharded(SavedStates& saved) noexcept final {
    return guard([&] { on_load_resharded(saved); });
  }

  PluginContext context_;
};

}  // namespace gradsweep::sdk
