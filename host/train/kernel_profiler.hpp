#pragma once
// LibTorch's profiler around some training steps (metrics.kernel_profile), read back as the plain records
// train/kernel_profile.hpp sums by class. On a CUDA device it records the CUDA kernels (CUPTI, through
// Kineto), else the CPU operators of the thread that trains.
#include "train/kernel_profile.hpp"

#include <vector>

namespace gradsweep::train {

class KernelProfiler {
 public:
  // Starts recording; `cuda`: the kernels of the CUDA devices, not the CPU operators.
  explicit KernelProfiler(bool cuda);
  // Stops if stop() was not called (a step failed): the profiler is process-wide state.
  ~KernelProfiler();
  KernelProfiler(const KernelProfiler&) = delete;
  KernelProfiler& operator=(const KernelProfiler&) = delete;

  // Stops recording and returns what was recorded (the caller synchronises the device first).
  std::vector<KernelRecord> stop();
  const char* source() const { return cuda_ ? "cuda kernels" : "cpu operators"; }

 private:
  bool cuda_;
  bool running_ = false;
};

}  // namespace gradsweep::train
