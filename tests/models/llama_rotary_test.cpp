// Llama's rotary position embeddings (plugins/models/llama/llama_layers.cpp), compiled in from the plugin's
// source: each feature pair (i, i + hs/2) turned by position x theta^(-2i/hs), checked against the same
// rotation written as a complex product, and the property rotary exists for: a query-key product that
// depends on the two positions only through their difference.
#include "llama_layers.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace gradsweep::models::llama {
namespace {

TEST(LlamaRotary, TurnsEachHalfPairByPositionTimesFrequency) {
  torch::manual_seed(1);
  const std::int64_t T = 12, hs = 8, half = hs / 2;
  const double theta = 10000.0;
  const auto tables = rotary_tables(T, hs, theta, torch::kCPU);
  const auto x = torch::randn({2, 3, T, hs}, torch::kDouble);
  const auto rotated = apply_rotary(x.to(torch::kFloat), tables).to(torch::kDouble);
  // The pair as one complex number x_i + i x_{i+half}, multiplied by e^{i p f_i}.
  const auto pairs = torch::view_as_complex(torch::stack({x.narrow(-1, 0, half), x.narrow(-1, half, half)}, -1));
  const auto freq = torch::pow(theta, -torch::arange(0, hs, 2, torch::kDouble) / static_cast<double>(hs));
  const auto angle = torch::outer(torch::arange(T, torch::kDouble), freq);  // (T, half)
  const auto turned = torch::view_as_real(pairs * torch::polar(torch::ones_like(angle), angle));
  const auto expected = torch::cat({turned.select(-1, 0), turned.select(-1, 1)}, -1);
  EXPECT_TRUE(torch::allclose(rotated, expected, 1e-5, 1e-6)) << (rotated - expected).abs().max();
  EXPECT_TRUE(torch::allclose(rotated.select(2, 0), x.select(2, 0), 1e-6, 1e-7)) << "position 0 is not turned";
}

TEST(LlamaRotary, QueryKeyProductsDependOnTheDistanceOnly) {
  torch::manual_seed(2);
  const std::int64_t T = 40, hs = 16;
  const auto tables = rotary_tables(T, hs, 500000.0, torch::kCPU);
  // The same query and key vector at every position.
  const auto q = torch::randn({hs}).expand({1, 1, T, hs}).contiguous();
  const auto k = torch::randn({hs}).expand({1, 1, T, hs}).contiguous();
  const auto scores = torch::matmul(apply_rotary(q, tables), apply_rotary(k, tables).transpose(-2, -1))[0][0];  // (T,T)
  for (std::int64_t distance : {0, 1, 5, 17}) {
    const auto diagonal = scores.diagonal(-distance);  // query at t, key at t - distance
    EXPECT_LT((diagonal - diagonal[0]).abs().max().item<double>(), 1e-4) << "distance " << distance;
  }
  EXPECT_GT((scores.diagonal(0)[0] - scores.diagonal(-1)[0]).abs().item<double>(), 1e-3)
      << "different distances must give different products";
}

}  // namespace
}  // namespace gradsweep::models::llama
