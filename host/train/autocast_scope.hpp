#pragma once
// Enables LibTorch autocast for one forward pass, on CPU or CUDA (fp16/bf16), and restores the previous
// state on exit.
#include <ATen/autocast_mode.h>
#include <torch/types.h>

namespace gradsweep::train {

class AutocastScope {
 public:
  AutocastScope(torch::DeviceType device, torch::ScalarType dtype) : device_(device) {
    active_ = dtype != torch::kFloat;
    if (!active_) return;
    at::autocast::set_autocast_dtype(device, dtype);
    at::autocast::set_autocast_enabled(device, true);
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    if (!active_) return;
    // Cached casts of weights are only valid while the weights do not change: drop them every step.
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(device_, false);
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  torch::DeviceType device_;
  bool active_ = false;
};

}  // namespace gradsweep::train
