#pragma once
// The Model interface: what a model plugin gives the trainer.
//
// `ModelAbi` is the boundary the host calls (noexcept, Status results). Plugin authors derive from
// `Model`, which implements the boundary by forwarding to ordinary (throwing) virtual functions and
// converting exceptions into Status. Methods are only ever appended within an ABI major version.
//
// One naming rule, for models and strategies alike: the author's function behind the boundary's method M is
// `on_M` (`info` -> `on_info`, `loss` -> `on_loss`, StrategyAbi's `save_state` -> `on_save_state`), so that each
// method has one name on both sides. SDK 1.9's author names (describe, compute_loss, save, ...) were renamed so
// without touching ModelAbi or StrategyAbi: a plugin built against an older SDK still loads; its source needs
// the new names (docs/plugins.md#how-the-sdk-grows).
#include <gradsweep/sdk/services.hpp>
#include <gradsweep/sdk/status.hpp>

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gradsweep::sdk {

// A trainable tensor with a stable name. The order of parameters is part of a model's contract: every
// rank lists them in the same order, and strategies index them by position.
struct Parameter {
  std::string name;
  torch::Tensor tensor;
  // True for matrices indexed by token id (input embedding, output projection): in a step only the rows
  // of tokens seen (or sampled) get a gradient, which sparse strategies exploit.
  bool row_sparse = false;
};

struct NamedTensor {
  std::string name;
  torch::Tensor tensor;
};

// One micro-batch of next-token prediction. inputs and targets are (B, T) int64 on the model's device.
struct Batch {
  torch::Tensor inputs;
  torch::Tensor targets;
  // SDK 1.3: what makes a sample's randomness independent of how the global batch was split over ranks
  // and micro-batches (see sample_dropout.hpp). A 1.3 host fills them for every training micro-batch;
  // sample_ids is undefined in evaluation and from older hosts.
  torch::Tensor sample_ids{};  // (B,) int64 on the model's device: each sequence's index in the step's global batch
  std::int64_t step = -1;      // the optimizer step the micro-batch belongs to
  std::uint64_t seed = 0;      // train.seed
};

// Restricts the output softmax to some vocabulary rows (sampled softmax). Logits are computed only for
// `rows`; `log_q`, when defined, is subtracted from them (the sampling correction); `targets` are the
// batch's targets re-indexed into `rows`.
struct OutputSubset {
  torch::Tensor rows;     // (S,) int64, distinct vocabulary ids
  torch::Tensor targets;  // (B, T) int64, values in [0, S)
  torch::Tensor log_q;    // (S,) float, or undefined for no correction
};

struct ModelInfo {
  std::string architecture;  // "gpt2", "lstm_lm", ...
  std::int64_t vocab_size = 0;
  std::int64_t block_size = 0;  // longest sequence the model accepts; 0 = unlimited
  std::int64_t num_parameters = 0;
  bool supports_output_subset = false;
};

// ---- ABI 1.4: model units ----
// A unit is a group of parameters that is used together in one stretch of the forward pass (a GPT-2
// block, one LSTM layer): what a sharding strategy (`fsdp`) gathers before the stretch and frees after it.
// `parameters` are indices into the model's parameters(); a parameter belongs to at most one unit.
// Parameters in no unit form the root unit (embeddings, a tied output head, a final norm), which is held
// for the whole forward and backward pass.
struct ModelUnit {
  std::string name;
  std::vector<std::size_t> parameters;
};

// Lent by the host to a model that declares units (ModelAbi::set_unit_hooks). The model calls
// before_forward(u) before unit u's first use of its parameters in a forward pass, and after_forward(u,
// output) after its last, passing the unit's output: the tensor whose gradient reaches every parameter
// of the unit. The host marks the unit's backward as starting when that gradient is computed.
class UnitHooks {
 public:
  virtual Status before_forward(std::size_t unit) noexcept = 0;
  virtual Status after_forward(std::size_t unit, const torch::Tensor& output) noexcept = 0;

 protected:
  ~UnitHooks() = default;
};

// The model's side of the hooks: does nothing when no hooks are set (no units asked for, an older host).
class UnitCalls {
 public:
  void set(UnitHooks* hooks) { hooks_ = hooks; }
  bool active() const { return hooks_ != nullptr; }
  void begin(std::size_t unit) const {
    if (hooks_ != nullptr) check(hooks_->before_forward(unit));
  }
  // Returns `output`, so a forward reads `x = units.end(i, block(x))`.
  torch::Tensor end(std::size_t unit, torch::Tensor output) const {
    if (hooks_ != nullptr) check(hooks_->after_forward(unit, output));
    return output;
  }

 private:
  UnitHooks* hooks_ = nullptr;
};

// ---- ABI 1.5: weights that leave gradsweep ----
// The model's parameters as another framework lays them out: for format "hf", Hugging Face transformers'
// config.json and the tensors its model class loads (its names, its layouts, the real vocabulary's rows
// only). The host writes them (model.safetensors beside config.json: `gradsweep export`). ABI 1.6 reads
// them back: the host hands a file's tensors to import_weights (`model.init_from`).
struct ExportedWeights {
  std::string config_json;
  std::vector<NamedTensor> tensors;  // contiguous, on the CPU
};

class ModelAbi {
 public:
  virtual Status info(ModelInfo* out) noexcept = 0;
  virtual Status parameters(std::vector<Parameter>* out) noexcept = 0;
  // Non-trainable state that a checkpoint must hold (e.g. running statistics); often empty.
  virtual Status buffers(std::vector<NamedTensor>* out) noexcept = 0;
  // Mean cross-entropy over the batch's B*T positions, over the full vocabulary or over `subset`.
  virtual Status loss(const Batch& batch, const OutputSubset* subset, torch::Tensor* out) noexcept = 0;
  // Training FLOPs per token (forward + backward) at sequence length `seq_len`.
  virtual Status flops_per_token(std::int64_t seq_len, double* out) noexcept = 0;
  virtual Status set_training(bool training) noexcept = 0;
  // ---- ABI 1.4 (the host calls them only on plugins built against 1.4 or later) ----
  // The model's units; empty: it declares none and runs as one unit (the root).
  virtual Status units(std::vector<ModelUnit>* out) noexcept = 0;
  // Hooks the model calls around each unit in every forward pass from now on; nullptr: none.
  virtual Status set_unit_hooks(UnitHooks* hooks) noexcept = 0;
  // ---- ABI 1.5 ----
  // The current parameters in `format` ("hf"); an error Status names the formats the model has.
  virtual Status export_weights(const std::string& format, ExportedWeights* out) noexcept = 0;
  // ---- ABI 1.6 ----
  // The inverse: sets the parameters from `in`, laid out as export_weights(format) gives them (names,
  // shapes; any floating dtype). An error Status names what is missing, unexpected or misshapen, and then
  // no parameter has changed.
  virtual Status import_weights(const std::string& format, const ExportedWeights& in) noexcept = 0;
  // The next-token logits at every position of batch.inputs, (B, T, vocab_size) float32, the real
  // vocabulary only, in the mode set_training left: what another framework's forward is compared with.
  virtual Status logits(const Batch& batch, torch::Tensor* out) noexcept = 0;

 protected:
  ~ModelAbi() = default;  // destroyed only through the plugin's own destroy function
};

class Model : public ModelAbi {
 public:
  explicit Model(const PluginContext& context) : context_(context) {}
  virtual ~Model() = default;

 protected:
  virtual ModelInfo on_info() = 0;
  virtual std::vector<Parameter> on_parameters() = 0;
  virtual std::vector<NamedTensor> on_buffers() { return {}; }
  virtual torch::Tensor on_loss(const Batch& batch, const OutputSubset* subset) = 0;
  virtual double on_flops_per_token(std::int64_t seq_len) = 0;
  virtual void on_set_training(bool training) = 0;
  virtual std::vector<ModelUnit> on_units() { return {}; }
  // SDK 1.5: the parameters in another framework's layout (ExportedWeights); by default none.
  virtual ExportedWeights on_export_weights(const std::string& format) {
    throw Error("model '" + on_info().architecture + "' has no export to '" + format + "'");
  }
  // SDK 1.6: ModelAbi::logits; by default none.
  virtual torch::Tensor on_logits(const Batch& batch) {
    (void)batch;
    throw Error("model '" + on_info().architecture + "' has no logits");
  }
  // SDK 1.6: the inverse of on_export_weights; by default none.
  virtual void on_import_weights(const std::string& format, const ExportedWeights& weights) {
    (void)weights;
    throw Error("model '" + on_info().architecture + "' has no import from '" + format + "'");
  }

  const PluginContext& context() const { return context_; }
  // What the forward pass calls around each declared unit.
  const UnitCalls& unit_calls() const { return unit_calls_; }

 private:
  Status info(ModelInfo* out) noexcept final {
    return guard([&] { *out = on_info(); });
  }
  Status parameters(std::vector<Parameter>* out) noexcept final {
    return guard([&] { *out = on_parameters(); });
  }
  Status buffers(std::vector<NamedTensor>* out) noexcept final {
    return guard([&] { *out = on_buffers(); });
  }
  Status loss(const Batch& batch, const OutputSubset* subset, torch::Tensor* out) noexcept final {
    return guard([&] { *out = on_loss(batch, subset); });
  }
  Status flops_per_token(std::int64_t seq_len, double* out) noexcept final {
    return guard([&] { *out = on_flops_per_token(seq_len); });
  }
  Status set_training(bool training) noexcept final {
    return guard([&] { on_set_training(training); });
  }
  Status units(std::vector<ModelUnit>* out) noexcept final {
    return guard([&] { *out = on_units(); });
  }
  Status set_unit_hooks(UnitHooks* hooks) noexcept final {
    return guard([&] { unit_calls_.set(hooks); });
  }
  Status export_weights(const std::string& format, ExportedWeights* out) noexcept final {
    return guard([&] { *out = on_export_weights(format); });
  }
  Status import_weights(const std::string& format, const ExportedWeights& in) noexcept final {
    return guard([&] { on_import_weights(format, in); });
  }
  Status logits(const Batch& batch, torch::Tensor* out) noexcept final {
    return guard([&] { *out = on_logits(batch); });
  }

  PluginContext context_;
  UnitCalls unit_calls_;
};

}  // namespace gradsweep::sdk
