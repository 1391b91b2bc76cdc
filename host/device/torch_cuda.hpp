#pragma once
// LibTorch's CUDA half, loaded only where a GPU may be used. gradsweep and its plugins link LibTorch's CPU
// half alone (gradsweep_torch, top-level CMakeLists.txt): libtorch_cuda.so and what it needs (cuBLAS,
// cuDNN, cuFFT, cuSPARSE, NVSHMEM, ...) cost every process 0.23 s of CPU to load (0.45 s -> 0.68 s for a
// program that links nothing else; docs/measurements/README.md#process-start), paid by every rank of every
// CPU run and every test. LibTorch finds CUDA through hooks that libtorch_cuda.so registers when it is
// loaded, and settles on the first question whether CUDA is there (at::detail::getCUDAHooks()), so the
// library is loaded first thing in main(), before anything asks.
#include <string>

namespace gradsweep::device {

struct TorchCuda {
  bool loaded = false;
  std::string detail;  // loaded: the library's path; not loaded: why
};

// Whether this machine has an NVIDIA driver (/dev/nvidiactl or /proc/driver/nvidia): what decides when
// GRADSWEEP_TORCH_CUDA is unset.
bool has_nvidia_driver();

// Loads libtorch_cuda.so from the directory of the libtorch_cpu.so this process uses, when the machine
// has an NVIDIA driver (/dev/nvidiactl or /proc/driver/nvidia) or GRADSWEEP_TORCH_CUDA=1; never with
// GRADSWEEP_TORCH_CUDA=0. The first call decides; later calls return its answer. A library that is there
// but fails to load is not loaded, with dlopen's reason in `detail`; the process goes on without CUDA.
const TorchCuda& load_torch_cuda();

// For `gradsweep --version` and errors: "LibTorch CUDA loaded (CUDA runtime 13.0)" or
// "LibTorch CUDA not loaded: <why>". Calls load_torch_cuda().
std::string describe_torch_cuda();

}  // namespace gradsweep::device
