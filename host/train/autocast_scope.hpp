#pragma once
// Enables LibTorch autocast for one forward pass, on CPU (bf16) or CUDA (fp16/bf16), and restores the
// previous state on exit. The autocast API changed in LibTorch 2.4; both spellings are kept here.
#include <ATen/autocast_mode.h>
#include <torch/types.h>
#include <torch/version.h>

namespace gradsweep::host {

class AutocastScope {
 public:
  AutocastScope(torch::DeviceType device, torch::ScalarType dtype) : device_(device) {
    active_ = dtype != torch::kFloat;
    if (!active_) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_dtype(device, dtype);
    at::autocast::set_autocast_enabled(device, true);
#else
    if (device == torch::kCUDA) {
      at::autocast::set_autocast_gpu_dtype(dtype);
      at::autocast::set_enabled(true);
    } else {
      at::autocast::set_autocast_cpu_dtype(dtype);
      at::autocast::set_cpu_enabled(true);
    }
#endif
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    if (!active_) return;
    // Cached casts of weights are only valid while the weights do not change: drop them every step.
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(device_, false);
#else
    if (device_ == torch::kCUDA)
      at::autocast::set_enabled(false);
    else
      at::autocast::set_cpu_enabled(false);
#endif
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  torch::DeviceType device_;
  bool active_ = false;
};

}  // namespace gradsweep::host
