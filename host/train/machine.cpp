#include "train/machine.hpp"

#include "util/atomic_file.hpp"

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include <dlfcn.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace gradsweep::host {
namespace fs = std::filesystem;

int choose_threads(int requested, int ranks_on_node) {
  if (requested > 0) return requested;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, ranks_on_node));
}

bool set_compute_threads(int threads) {
  torch::set_num_threads(threads);
  // Looked up at run time: the symbol exists only when the BLAS that LibTorch loaded is OpenBLAS.
  using SetThreads = void (*)(int);
  auto* openblas = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (openblas != nullptr) openblas(threads);
  return openblas != nullptr;
}

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
}

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

fs::path default_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "gradsweep";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache" / "gradsweep";
  return fs::temp_directory_path() / "gradsweep-cache";
}

double cpu_peak_flops(int threads, const fs::path& cache_file) {
  const std::string key = host_name() + "/threads=" + std::to_string(threads);
  nlohmann::json cache = nlohmann::json::object();
  if (std::ifstream in(cache_file); in) {
    try {
      in >> cache;
      if (cache.contains(key)) return cache[key].get<double>();
    } catch (const std::exception&) {
      cache = nlohmann::json::object();  // a damaged cache is remeasured, not fatal
    }
  }
  constexpr std::int64_t n = 1024;
  const torch::Tensor a = torch::randn({n, n}), b = torch::randn({n, n});
  torch::Tensor c = torch::mm(a, b);  // warm up allocator and BLAS threads
  double best = 0.0;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    c = torch::mm(a, b);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 2.0 * n * n * n / s);
  }
  cache[key] = best;
  try {
    util::write_file_atomically(cache_file, cache.dump(2));
  } catch (const std::exception&) {
    // A read-only home only costs a remeasurement next time.
  }
  return best;
}

}  // namespace gradsweep::host
