#pragma once
// Where a step's compute goes, by kernel class: GEMM, attention, elementwise and norm, optimizer,
// communication, other (metrics.kernel_profile; docs/results.md, "Kernel profile").
//
// The records come from LibTorch's profiler (train/kernel_profiler.hpp): on a GPU its CUDA kernels, which
// do not nest; on a CPU its operators, which do (aten::linear calls aten::addmm), so each operator is
// charged its self time, what is left when its children's time is taken out. The classes are decided by
// name: a kernel's name says what it computes (cuBLAS's "sm90_xmma_gemm_...", "flash_fwd_kernel",
// "multi_tensor_apply_kernel<...FusedAdam...>"), and so does an operator's.
#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gradsweep::train {

enum class KernelClass : std::uint8_t { Gemm, Attention, ElementwiseNorm, Optimizer, Communication, Other };
constexpr int kKernelClassCount = 6;
const char* to_string(KernelClass kind);  // "gemm", "attention", "elementwise_norm", ...

// The class of a CUDA kernel or a LibTorch operator by its name.
KernelClass classify_kernel(std::string_view name);

// One profiled event. Events on one lane (a CPU thread, a CUDA stream) nest; events on different lanes
// may overlap (a NCCL kernel beside the backward's).
struct KernelRecord {
  std::string name;
  std::uint64_t lane = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
};

struct KernelProfile {
  std::string source;  // "cuda kernels" or "cpu operators"
  std::int64_t steps = 0;
  double step_seconds = 0;                          // mean wall time of a profiled step
  std::array<double, kKernelClassCount> seconds{};  // per step, by class
  struct Entry {
    std::string name;
    KernelClass kind = KernelClass::Other;
    double seconds = 0;  // per step
    double calls = 0;    // per step
  };
  std::vector<Entry> top;  // the costliest names, most first

  double busy_seconds() const;  // all classes, per step
  nlohmann::json to_json() const;
  // A table for people: one row per class with its milliseconds per step and share of the busy time.
  std::string table() const;
};

// Self times summed by name and class, per step over `steps` steps of `step_seconds` each on average;
// the `top_n` costliest names are kept.
KernelProfile summarize_kernels(const std::vector<KernelRecord>& records, const std::string& source, std::int64_t steps,
                                double step_seconds, std::size_t top_n = 12);

}  // namespace gradsweep::train
