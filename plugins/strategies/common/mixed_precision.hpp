#pragma once
// Mixed precision shared by ps-amp, dps-amp and ring-amp (docs/strategies.md, "AMP"):
//
//   - forward and backward under autocast in `precision` (bf16 on CPU; fp16 or bf16 on GPU), while the
//     model's weights stay float32 and are the master weights the optimizer updates (Apex O1's casting,
//     no separate half copy of the model);
//   - gradients travel in 16 bit (`comm_dtype`), half the bytes of float32 (what Apex O2's half model
//     gives its allreduce);
//   - dynamic loss scaling (on by default for fp16, off for bf16, whose exponent range is float32's):
//     the trainer multiplies the loss by `loss_scale()`; a non-finite gradient after communication skips
//     the step on every rank and halves the scale; `growth_interval` clean steps double it.
//
// The strategy decides *where* overflow is seen (after an allreduce every rank sees the same sums; a
// sharded or server strategy must combine the verdict) and calls `finish_step` with the agreed answer.
#include <gradsweep/sdk/capabilities.hpp>
#include <gradsweep/sdk/services.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/types.h>

#include <array>
#include <cstdint>

namespace gradsweep::strategies {

inline constexpr std::array<sdk::OptionDecl, 9> kMixedPrecisionOptions{{
    {"precision", sdk::OptionType::String, "bf16",
     "autocast compute type: bf16 or fp16 (fp16 autocast needs a CUDA device on LibTorch 1.x; fp32 is the plain "
     "strategy)",
     "bf16|fp16"},
    {"comm_dtype", sdk::OptionType::String, "auto", "gradients on the wire: auto (= precision), bf16, fp16, fp32",
     "auto|bf16|fp16|fp32"},
    {"loss_scaling", sdk::OptionType::String, "auto", "auto (dynamic for fp16, off for bf16), dynamic, off",
     "auto|dynamic|off"},
    {"init_scale", sdk::OptionType::Float, "65536", "first loss scale of dynamic loss scaling"},
    {"growth_interval", sdk::OptionType::Int, "2000", "clean steps after which the scale doubles"},
    {"growth_factor", sdk::OptionType::Float, "2", "factor the scale grows by"},
    {"backoff_factor", sdk::OptionType::Float, "0.5", "factor the scale shrinks by on overflow"},
    {"inject_overflow_step", sdk::OptionType::Int, "-1",
     "testing: make this step's gradient non-finite on inject_overflow_rank (-1: never)"},
    {"inject_overflow_rank", sdk::OptionType::Int, "0", "testing: the rank whose gradient overflows"},
}};

class MixedPrecision {
 public:
  // Full precision: float32 compute and wire, no loss scaling (the plain ps, dps, ring).
  MixedPrecision() = default;
  // From an -amp variant's options (kMixedPrecisionOptions); checks their values.
  MixedPrecision(const sdk::Options& options, const std::string& strategy);

  bool enabled() const { return compute_ != torch::kFloat; }
  torch::ScalarType compute_dtype() const { return compute_; }
  torch::ScalarType comm_dtype() const { return wire_; }
  double loss_scale() const { return scaling_ ? scale_ : 1.0; }

  // The test hook: on the configured step and rank, makes `grad` non-finite (as an fp16 overflow would).
  void maybe_inject_overflow(std::int64_t step, int rank, torch::Tensor& grad) const;

  // Whether any element of `t` is inf or NaN.
  static bool has_overflow(const torch::Tensor& t);

  // Ends the step with every rank's agreed verdict: adjusts the scale and returns whether to apply the
  // update. Logs a skipped step and records "loss_scale" in the step's metrics.
  bool finish_step(bool overflow, std::int64_t step, sdk::Logger& log, sdk::MetricsSink& metrics);

  // A server or shard owner tells the others the new scale: they adopt it.
  void set_loss_scale(double scale) { scale_ = scale; }

  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);

 private:
  torch::ScalarType compute_ = torch::kFloat;
  torch::ScalarType wire_ = torch::kFloat;
  bool scaling_ = false;
  double scale_ = 1.0;
  std::int64_t growth_interval_ = 2000;
  double growth_ = 2.0, backoff_ = 0.5;
  std::int64_t clean_steps_ = 0;
  std::int64_t inject_step_ = -1;
  int inject_rank_ = 0;
};

// An agreed yes/no: true on every rank when it is true on any (a 1-byte allreduce-max).
bool any_rank(sdk::Communicator& comm, bool value);

}  // namespace gradsweep::strategies
