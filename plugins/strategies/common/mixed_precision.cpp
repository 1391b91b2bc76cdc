#include "mixed_precision.hpp"

#include <torch/torch.h>

#include <limits>
#include <sstream>

namespace gradsweep::strategies {
namespace {

// The host has checked the choices (kMixedPrecisionOptions); the throw guards direct use.
torch::ScalarType dtype_named(const std::string& name, const std::string& key, const std::string& strategy) {
  if (name == "bf16") return torch::kBFloat16;
  if (name == "fp16") return torch::kHalf;
  if (name == "fp32") return torch::kFloat;
  throw sdk::Error("strategy '" + strategy + "': " + key + " '" + name + "' is not one of bf16, fp16, fp32");
}

}  // namespace

MixedPrecision::MixedPrecision(const sdk::Options& options, const std::string& strategy) {
  const std::string precision = options.text("precision");
  compute_ = dtype_named(precision, "precision", strategy);
  if (compute_ == torch::kFloat)
    throw sdk::Error("strategy '" + strategy + "': precision fp32 is the plain strategy; use bf16 or fp16 here");
  const std::string wire = options.text("comm_dtype");
  wire_ = wire == "auto" ? compute_ : dtype_named(wire, "comm_dtype", strategy);
  const std::string scaling = options.text("loss_scaling");  // auto, dynamic or off: the host checked the choices
  scaling_ = scaling == "dynamic" || (scaling == "auto" && (compute_ == torch::kHalf || wire_ == torch::kHalf));
  scale_ = options.number("init_scale");
  growth_interval_ = options.integer("growth_interval");
  growth_ = options.number("growth_factor");
  backoff_ = options.number("backoff_factor");
  if (scale_ <= 0 || growth_ < 1 || backoff_ <= 0 || backoff_ >= 1 || growth_interval_ < 1)
    throw sdk::Error("strategy '" + strategy +
                     "': need init_scale > 0, growth_factor >= 1, 0 < backoff_factor < 1, growth_interval >= 1");
  inject_step_ = options.integer("inject_overflow_step");
  inject_rank_ = static_cast<int>(options.integer("inject_overflow_rank"));
}

void MixedPrecision::maybe_inject_overflow(std::int64_t step, int rank, torch::Tensor& grad) const {
  if (step == inject_step_ && rank == inject_rank_ && grad.defined() && grad.numel() > 0)
    grad.view({-1})[0].fill_(std::numeric_limits<float>::infinity());
}

bool MixedPrecision::has_overflow(const torch::Tensor& t) {
  return t.numel() > 0 && !torch::isfinite(t).all().item<bool>();
}

bool MixedPrecision::finish_step(bool overflow, std::int64_t step, sdk::Logger& log, sdk::MetricsSink& metrics) {
  if (overflow) {
    std::ostringstream m;
    m << "step " << step << ": gradient overflow (inf/NaN); update skipped";
    if (scaling_) {
      scale_ *= backoff_;
      m << ", loss scale lowered to " << scale_;
    }
    log.warn(m.str());
    clean_steps_ = 0;
  } else if (scaling_ && ++clean_steps_ >= growth_interval_) {
    scale_ *= growth_;
    clean_steps_ = 0;
  }
  metrics.record("loss_scale", loss_scale());
  return !overflow;
}

void MixedPrecision::save(torch::serialize::OutputArchive& archive) const {
  archive.write("amp_loss_scale", torch::tensor({scale_}, torch::kDouble));
  archive.write("amp_clean_steps", torch::tensor({clean_steps_}, torch::kLong));
}

void MixedPrecision::load(torch::serialize::InputArchive& archive) {
  torch::Tensor scale, clean;
  archive.read("amp_loss_scale", scale);
  archive.read("amp_clean_steps", clean);
  scale_ = scale.item<double>();
  clean_steps_ = clean.item<std::int64_t>();
}

bool any_rank(sdk::Communicator& comm, bool value) {
  torch::Tensor flag = torch::tensor({value ? 1 : 0}, torch::kByte);
  sdk::check(comm.allreduce(flag, sdk::ReduceOp::Max));
  return flag.item<int>() != 0;
}

}  // namespace gradsweep::strategies
