#include "train/kernel_profiler.hpp"

#include <torch/csrc/autograd/profiler_kineto.h>

#include <set>
#include <stdexcept>

namespace gradsweep::train {
namespace {

namespace profiler = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

}  // namespace

KernelProfiler::KernelProfiler(bool cuda) : cuda_(cuda) {
  // CPU activity is recorded either way: without it Kineto has no operators to hang the kernels on.
  std::set<ActivityType> activities{ActivityType::CPU};
  if (cuda_) activities.insert(ActivityType::CUDA);
  const ProfilerConfig config(ProfilerState::KINETO);
  profiler::prepareProfiler(config, activities);
  profiler::enableProfiler(config, activities);
  running_ = true;
}

KernelProfiler::~KernelProfiler() {
  if (running_) profiler::disableProfiler();
}

std::vector<KernelRecord> KernelProfiler::stop() {
  if (!running_) throw std::logic_error("KernelProfiler::stop called twice");
  running_ = false;
  const std::unique_ptr<profiler::ProfilerResult> result = profiler::disableProfiler();
  std::vector<KernelRecord> records;
  for (const profiler::KinetoEvent& e : result->events()) {
    const bool on_gpu = e.deviceType() == c10::DeviceType::CUDA;
    if (on_gpu != cuda_) continue;  // on a GPU the kernels only; the CPU side only launched them
    // A lane per CUDA stream (kernels on two streams overlap), else per thread (operators nest in it).
    const std::uint64_t lane = on_gpu ? static_cast<std::uint64_t>(e.deviceResourceId()) : e.startThreadId();
    records.push_back({e.name(), lane, e.startNs(), e.endNs()});
  }
  return records;
}

}  // namespace gradsweep::train
