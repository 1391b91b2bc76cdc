// MFU through the real CLI: the peak is measured in the precision the strategy computes in, summary.json
// says which, and an MFU above 1 is flagged rather than passed off as a utilisation.
#include "support/test_support.hpp"
#include "tiny_cell.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace gradsweep {
namespace {

namespace fs = std::filesystem;

nlohmann::json train_tiny(const std::string& tag, const std::string& extra) {
  const fs::path dir = test::scratch_dir(tag);
  // A cache of its own: the peak is measured by this run, not taken from an earlier one.
  const auto r = test::run_command("XDG_CACHE_HOME=" + (dir / "cache").string() + " " +
                                   test::gradsweep_command("train " + test::write_tiny_cell(dir, 6, extra).string() +
                                                           " --out " + (dir / "cell").string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json summary = nlohmann::json::parse(test::read_text(dir / "cell" / "summary.json"));
  // A measured peak is cached in the run's own cache; a given one is not measured at all.
  EXPECT_EQ(fs::exists(dir / "cache" / "gradsweep" / "peak_flops.json"), summary["peak_flops_source"] == "measured");
  return summary;
}

void expect_mfu_within_peak_or_flagged(const nlohmann::json& s) {
  EXPECT_GT(s["mfu"].get<double>(), 0.0);
  if (s["mfu"].get<double>() > 1.0)
    EXPECT_EQ(s["mfu_flag"], "above peak: peak underestimated") << s.dump(2);
  else
    EXPECT_EQ(s["mfu_flag"], "") << s.dump(2);
}

TEST(Mfu, PeakInTheStrategysPrecisionIsRecorded) {
  const nlohmann::json fp32 = train_tiny("fp32", "strategy: {name: single, precision: fp32}\n");
  const nlohmann::json bf16 = train_tiny("bf16", "strategy: {name: single, precision: bf16}\n");
  EXPECT_EQ(fp32["peak_flops_precision"], "fp32");
  EXPECT_EQ(bf16["peak_flops_precision"], "bf16");
  for (const auto* s : {&fp32, &bf16}) {
    EXPECT_EQ((*s)["peak_flops_source"], "measured");
    EXPECT_GT((*s)["peak_flops_per_rank"].get<double>(), 1e8);
    expect_mfu_within_peak_or_flagged(*s);
  }
  EXPECT_NE(fp32["peak_flops_per_rank"], bf16["peak_flops_per_rank"]);
}

TEST(Mfu, AGivenPeakTooLowIsFlagged) {
  // 1 MFLOP/s: any real run is "above peak"; the summary says so instead of reporting a utilisation.
  const nlohmann::json s = train_tiny("given", "strategy: {name: single}\nmetrics: {peak_flops: 1e6}\n");
  EXPECT_EQ(s["peak_flops_source"], "metrics.peak_flops");
  EXPECT_GT(s["mfu"].get<double>(), 1.0);
  EXPECT_EQ(s["mfu_flag"], "above peak: peak underestimated");
}

}  // namespace
}  // namespace gradsweep
