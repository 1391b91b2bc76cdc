#include "device/machine.hpp"

#include "env/environment.hpp"
#include "util/atomic_file.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <torch/types.h>

#include <dlfcn.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace gradsweep::device {
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

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

fs::path default_cache_dir() {
  if (env::is_set("XDG_CACHE_HOME")) return fs::path(env::text("XDG_CACHE_HOME")) / "gradsweep";
  if (env::is_set("HOME")) return fs::path(env::text("HOME")) / ".cache" / "gradsweep";
  return fs::temp_directory_path() / "gradsweep-cache";
}

std::string precision_name(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Float: return "fp32";
    case c10::ScalarType::BFloat16: return "bf16";
    case c10::ScalarType::Half: return "fp16";
    default: return c10::toString(dtype);
  }
}

namespace {

std::string cache_key(int threads, const std::string& precision) {
  return host_name() + "/threads=" + std::to_string(threads) + "/" + precision;
}

nlohmann::json read_cache(const fs::path& cache_file) {
  nlohmann::json cache = nlohmann::json::object();
  if (std::ifstream in(cache_file); in) {
    try {
      in >> cache;
    } catch (const std::exception&) {
      cache = nlohmann::json::object();  // a damaged cache is remeasured, not fatal
    }
  }
  return cache.is_object() ? cache : nlohmann::json::object();
}

void write_cache(const fs::path& cache_file, const nlohmann::json& cache) {
  try {
    util::write_file_atomically(cache_file, cache.dump(2));
  } catch (const std::exception&) {
    // A read-only home only costs a remeasurement next time.
  }
}

// FLOP/s of the best of several n x n products: at least 3, then more while under `budget_s`.
struct SizeRate {
  double flops_per_s = 0.0;
  double seconds_each = 0.0;
};
SizeRate product_rate(std::int64_t n, c10::ScalarType dtype, double budget_s) {
  const torch::Tensor a = torch::randn({n, n}).to(dtype), b = torch::randn({n, n}).to(dtype);
  torch::Tensor c = torch::mm(a, b);  // warm up the allocator, the BLAS threads and oneDNN's kernel cache
  SizeRate rate;
  double spent = 0.0;
  int repeats = 0;
  for (; repeats < 3 || (spent < budget_s && repeats < 50); ++repeats) {
    const auto t0 = std::chrono::steady_clock::now();
    c = torch::mm(a, b);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    spent += s;
    rate.flops_per_s = std::max(rate.flops_per_s, 2.0 * static_cast<double>(n * n * n) / s);
  }
  rate.seconds_each = spent / repeats;
  return rate;
}

double measure_peak(c10::ScalarType dtype) {
  torch::NoGradGuard no_grad;
  double best = 0.0;
  for (const std::int64_t n : {256, 512, 1024, 2048}) {
    const SizeRate rate = product_rate(n, dtype, 0.2);
    const bool plateau = rate.flops_per_s < 1.05 * best;
    best = std::max(best, rate.flops_per_s);
    // Past the plateau a bigger product only costs time; and the next size takes 8x this one's.
    if (plateau || rate.seconds_each > 0.04) break;
  }
  return best;
}

}  // namespace

PeakFlops cpu_peak_flops(int threads, c10::ScalarType dtype, const fs::path& cache_file) {
  std::string precision = precision_name(dtype);
  nlohmann::json cache = read_cache(cache_file);
  if (const std::string key = cache_key(threads, precision); cache.contains(key) && cache[key].is_number())
    return {cache[key].get<double>(), precision, "cached"};
  set_compute_threads(threads);
  double peak = 0.0;
  try {
    peak = measure_peak(dtype);
  } catch (const c10::Error&) {
    // No kernel for this dtype on this CPU (fp16 products on most): the fp32 peak is the honest bound.
    precision = "fp32";
    peak = measure_peak(c10::ScalarType::Float);
  }
  cache[cache_key(threads, precision)] = peak;
  write_cache(cache_file, cache);
  return {peak, precision, "measured"};
}

void forget_cached_peak(int threads, const std::string& precision, const fs::path& cache_file) {
  nlohmann::json cache = read_cache(cache_file);
  if (cache.erase(cache_key(threads, precision)) > 0) write_cache(cache_file, cache);
}

std::string mfu_flag(double mfu, bool restricts_vocabulary) {
  if (mfu <= 1.0) return "";
  return restricts_vocabulary ? "above peak: FLOPs count the whole vocabulary" : "above peak: peak underestimated";
}

void check_mfu_against_peak(double mfu, bool restricts_vocabulary, const PeakFlops& peak, int threads,
                            const fs::path& cache_file) {
  if (mfu_flag(mfu, restricts_vocabulary).empty()) return;
  if (restricts_vocabulary) {
    spdlog::info(
        "MFU {:.2f} is above 1: the model's FLOPs per token count a softmax over the whole vocabulary, the "
        "strategy trained one over part of it; compare such runs by tokens/s (mfu_flag)",
        mfu);
    return;
  }
  spdlog::warn(
      "MFU {:.2f} is above 1: the {} peak of {:.3g} FLOP/s per rank ({}) is too low; summary.json flags it "
      "(mfu_flag){}",
      mfu, peak.precision, peak.per_rank, peak.source,
      peak.source == "metrics.peak_flops" ? ": raise metrics.peak_flops" : ", and the next run measures again");
  if (peak.source != "metrics.peak_flops") forget_cached_peak(threads, peak.precision, cache_file);
}

}  // namespace gradsweep::device
