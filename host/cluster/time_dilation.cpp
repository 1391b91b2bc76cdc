#include "cluster/time_dilation.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

namespace gradsweep::cluster {
namespace {

// About 0.2 s of one core: a 128 x 128 float matrix product, repeated. The result is returned so the
// compiler keeps the work.
float matmul_loop() {
  constexpr int n = 128, repeats = 40;
  std::vector<float> a(n * n, 1.0f / n), b(n * n, 0.5f), c(n * n, 0.0f);
  for (int r = 0; r < repeats; ++r) {
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < n; ++k) {
        const float aik = a[i * n + k];
        for (int j = 0; j < n; ++j) c[i * n + j] += aik * b[k * n + j];
      }
    a[r % (n * n)] = c[(r * 7) % (n * n)] * 1e-3f;
  }
  return c[0];
}

// Wall time of `workers` threads each running the loop once, all started together.
double timed(int workers) {
  std::vector<float> sinks(static_cast<std::size_t>(workers));
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w)
    threads.emplace_back([&sinks, w] { sinks[static_cast<std::size_t>(w)] = matmul_loop(); });
  for (std::thread& t : threads) t.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

double parse_dilation(const std::string& text) {
  if (text == "auto") return 0.0;
  std::size_t used = 0;
  double f = 0;
  try {
    f = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(f) || f < 1.0)
    throw std::invalid_argument("--dilation: '" + text + "' must be a number >= 1 (1: no dilation) or auto");
  return f;
}

double measure_dilation(int nodes, int ranks_per_node) {
  // The best of three of each: other load on the machine only ever slows a run down.
  double alone = 1e30, together = 1e30;
  for (int i = 0; i < 3; ++i) {
    alone = std::min(alone, timed(ranks_per_node));
    together = std::min(together, timed(nodes * ranks_per_node));
  }
  return std::max(1.0, together / alone);
}

}  // namespace gradsweep::cluster
