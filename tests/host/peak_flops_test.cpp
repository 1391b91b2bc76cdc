// The peak MFU is measured against: per precision, cached per host, thread count and precision.
#include "support/test_support.hpp"
#include "device/machine.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>

namespace gradsweep {
namespace {

namespace fs = std::filesystem;
using device::cpu_peak_flops;
using device::PeakFlops;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(PeakFlops, MeasuredPerPrecisionCachedAndReused) {
  const fs::path cache = test::scratch_dir() / "peak_flops.json";
  auto t0 = std::chrono::steady_clock::now();
  const PeakFlops fp32 = cpu_peak_flops(1, c10::ScalarType::Float, cache);
  const double fp32_s = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  const PeakFlops bf16 = cpu_peak_flops(1, c10::ScalarType::BFloat16, cache);
  const double bf16_s = seconds_since(t0);
  EXPECT_EQ(fp32.precision, "fp32");
  EXPECT_EQ(fp32.source, "measured");
  EXPECT_GT(fp32.per_rank, 1e8);  // any CPU of this century, one thread
  // bf16 products have their own kernel (oneDNN); on a CPU without one LibTorch still multiplies bf16.
  EXPECT_EQ(bf16.precision, "bf16");
  EXPECT_GT(bf16.per_rank, 1e8);
  EXPECT_NE(bf16.per_rank, fp32.per_rank);
  // It runs at every cell start: cheap even on a shared, busy machine.
  EXPECT_LT(fp32_s, 4.0);
  EXPECT_LT(bf16_s, 4.0);

  const nlohmann::json stored = nlohmann::json::parse(test::read_text(cache));
  const std::string prefix = device::host_name() + "/threads=1/";
  ASSERT_TRUE(stored.contains(prefix + "fp32")) << stored.dump();
  ASSERT_TRUE(stored.contains(prefix + "bf16")) << stored.dump();
  EXPECT_EQ(stored[prefix + "fp32"].get<double>(), fp32.per_rank);
  EXPECT_EQ(stored[prefix + "bf16"].get<double>(), bf16.per_rank);

  // Reused, not remeasured: the same value, at once.
  t0 = std::chrono::steady_clock::now();
  const PeakFlops again = cpu_peak_flops(1, c10::ScalarType::BFloat16, cache);
  EXPECT_LT(seconds_since(t0), 0.05);
  EXPECT_EQ(again.source, "cached");
  EXPECT_EQ(again.per_rank, bf16.per_rank);

  // Above 1 from a softmax over part of the vocabulary (the FLOPs count all of it): the peak is kept.
  device::check_mfu_against_peak(1.8, true, again, 1, cache);
  EXPECT_TRUE(nlohmann::json::parse(test::read_text(cache)).contains(prefix + "bf16"));

  // An MFU above 1 proves the cached peak too low: it is forgotten, the other precision kept.
  device::check_mfu_against_peak(1.3, false, again, 1, cache);
  const nlohmann::json after = nlohmann::json::parse(test::read_text(cache));
  EXPECT_FALSE(after.contains(prefix + "bf16")) << after.dump();
  EXPECT_TRUE(after.contains(prefix + "fp32")) << after.dump();
}

TEST(PeakFlops, FlagOnlyAboveOne) {
  EXPECT_EQ(device::mfu_flag(0.4, false), "");
  EXPECT_EQ(device::mfu_flag(1.0, false), "");
  EXPECT_EQ(device::mfu_flag(1.09, false), "above peak: peak underestimated");
  EXPECT_EQ(device::mfu_flag(0.9, true), "");
  EXPECT_EQ(device::mfu_flag(1.8, true), "above peak: FLOPs count the whole vocabulary");
  EXPECT_EQ(device::precision_name(c10::ScalarType::BFloat16), "bf16");
  EXPECT_EQ(device::precision_name(c10::ScalarType::Half), "fp16");
}

}  // namespace
}  // namespace gradsweep
