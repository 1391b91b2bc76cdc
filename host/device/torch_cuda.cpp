#include "device/torch_cuda.hpp"

#include "env/environment.hpp"

#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <dlfcn.h>

#include <filesystem>
#include <optional>
#include <string>
#include <system_error>

namespace gradsweep::device {
namespace {

namespace fs = std::filesystem;

// The directory of the libtorch_cpu.so this process runs (the one that holds at::globalContext), so that
// the CUDA half comes from the same LibTorch whatever the run path says.
fs::path torch_library_dir() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&at::globalContext), &info) == 0 || info.dli_fname == nullptr) return {};
  return fs::path(info.dli_fname).parent_path();
}

TorchCuda load() {
  const std::optional<bool> forced = env::flag("GRADSWEEP_TORCH_CUDA");
  if (forced == false) return {false, "GRADSWEEP_TORCH_CUDA=0"};
  if (!forced && !has_nvidia_driver()) return {false, "no NVIDIA driver (/dev/nvidiactl)"};
  const fs::path dir = torch_library_dir();
  const fs::path library = dir / "libtorch_cuda.so";
  std::error_code ec;
  if (dir.empty() || !fs::exists(library, ec))
    return {false, "this LibTorch has no CUDA (no libtorch_cuda.so beside libtorch_cpu.so in " + dir.string() + ")"};
  // RTLD_GLOBAL: plugins and LibTorch's own lazy lookups resolve CUDA symbols against it.
  if (::dlopen(library.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    const char* why = ::dlerror();
    return {false, library.string() + " did not load: " + (why != nullptr ? why : "unknown reason")};
  }
  return {true, library.string()};
}

}  // namespace

bool has_nvidia_driver() {
  std::error_code ec;
  return fs::exists("/dev/nvidiactl", ec) || fs::exists("/proc/driver/nvidia/version", ec);
}

const TorchCuda& load_torch_cuda() {
  static const TorchCuda once = load();  // thread-safe, once per process
  return once;
}

std::string describe_torch_cuda() {
  const TorchCuda& cuda = load_torch_cuda();
  if (!cuda.loaded) return "LibTorch CUDA not loaded: " + cuda.detail;
  const auto& hooks = at::detail::getCUDAHooks();
  if (!hooks.hasCUDART()) return "LibTorch CUDA loaded from " + cuda.detail + ", but its hooks are not registered";
  const long v = hooks.versionCUDART();
  return "LibTorch CUDA loaded (CUDA runtime " + std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10) + ")";
}

}  // namespace gradsweep::device
