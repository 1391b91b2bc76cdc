// The statistics behind the report's comparisons, on synthetic draws from known distributions: interval
// coverage, verdicts, time-to-target interpolation checked by hand, and the labels that name plot series
// by what differs.
#include "analysis/series_labels.hpp"
#include "analysis/statistics.hpp"
#include "analysis/time_to_target.hpp"

#include "support/test_files.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace gradsweep {
namespace {
using namespace analysis;

std::vector<double> draw(std::mt19937& rng, int n, double mean, double sd) {
  std::normal_distribution<double> noise(mean, sd);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(noise(rng));
  return v;
}

TEST(Statistics, MedianMeanAndIntervalByHand) {
  // 1, 2, 3, 4, 10: mean 4, sample sd sqrt(50/4) = 3.5355; half width t(4) 2.776 x 3.5355 / sqrt(5) = 4.389.
  const Summary s = summarize({10, 2, 3, 1, 4});
  EXPECT_EQ(s.n, 5);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.mean, 4);
  ASSERT_TRUE(s.has_interval);
  EXPECT_NEAR(s.low, 4 - 4.389, 1e-3);
  EXPECT_NEAR(s.high, 4 + 4.389, 1e-3);
  EXPECT_DOUBLE_EQ(summarize({1, 2, 3, 4}).median, 2.5);
}

TEST(Statistics, OneValueHasNoInterval) {
  const Summary s = summarize({7.0, NAN});
  EXPECT_EQ(s.n, 1);
  EXPECT_DOUBLE_EQ(s.median, 7);
  EXPECT_FALSE(s.has_interval);
  const RatioSummary r = paired_ratio({2.0}, {1.0});
  EXPECT_EQ(r.rounds, 1);
  EXPECT_FALSE(r.has_interval);
  EXPECT_EQ(r.verdict, Verdict::NoInterval);
  EXPECT_EQ(verdict_text(r.verdict, true), "one round: no interval");
}

TEST(Statistics, TQuantiles) {
  EXPECT_NEAR(t_quantile_975(1), 12.706, 1e-3);
  EXPECT_NEAR(t_quantile_975(30), 2.042, 1e-3);
  EXPECT_NEAR(t_quantile_975(40), 2.021, 2e-3);   // tables: 2.021
  EXPECT_NEAR(t_quantile_975(120), 1.980, 2e-3);  // tables: 1.980
}

// 95% nominal: over 400 samples of 3 and of 5 normal draws, the interval holds the true mean in 90-99%.
TEST(Statistics, IntervalCoverageIsNearNominal) {
  std::mt19937 rng(20261130);
  for (const int n : {3, 5}) {
    int covered = 0;
    for (int trial = 0; trial < 400; ++trial) {
      const Summary s = summarize(draw(rng, n, 1000, 80));
      covered += s.low <= 1000 && 1000 <= s.high;
    }
    EXPECT_GE(covered, 360) << "n=" << n;
    EXPECT_LE(covered, 396) << "n=" << n;
  }
}

// The paired ratio's interval covers the true ratio at the nominal rate too (log-normal noise, a drift
// shared by both sides of a round that pairing cancels).
TEST(Statistics, PairedRatioCoverage) {
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 0.05), drift(0, 0.3);
  int covered = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<double> a, b;
    for (int r = 0; r < 4; ++r) {
      const double shared = drift(rng);
      a.push_back(1.1 * std::exp(shared + noise(rng)));
      b.push_back(std::exp(shared + noise(rng)));
    }
    const RatioSummary s = paired_ratio(a, b);
    covered += s.low <= 1.1 && 1.1 <= s.high;
  }
  EXPECT_GE(covered, 360);
  EXPECT_LE(covered, 396);
}

// Same distribution: "not resolved" in most trials (5% false verdicts expected); 20% apart with 2% spread,
// five rounds: resolved the right way round (almost) every time.
TEST(Statistics, Verdicts) {
  std::mt19937 rng(42);
  int resolved_same = 0, faster = 0, slower = 0;
  for (int trial = 0; trial < 200; ++trial) {
    resolved_same += paired_ratio(draw(rng, 3, 1000, 60), draw(rng, 3, 1000, 60)).verdict != Verdict::NotResolved;
    const auto base = draw(rng, 5, 1000, 20);
    faster += verdict_text(paired_ratio(draw(rng, 5, 1200, 24), base).verdict, true) == "faster";
    slower += verdict_text(paired_ratio(draw(rng, 5, 800, 16), base).verdict, true) == "slower";
  }
  EXPECT_LE(resolved_same, 20);
  EXPECT_GE(faster, 196);
  EXPECT_GE(slower, 196);
  // Lower step time is the faster one.
  EXPECT_EQ(verdict_text(Verdict::Lower, false), "faster");
}

std::vector<EvalPoint> curve() {
  // Evaluations at steps 9, 19, 29 of 100 tokens a step.
  return {{9, 4.0, 10.0, 1000, 5000}, {19, 3.0, 22.0, 2000, 9000}, {29, 2.0, 30.0, 3000, 13000}};
}

TEST(TimeToTarget, InterpolatesBetweenEvaluations) {
  // 2.5 lies halfway between 3.0 (step 19, 22 s, 2000 tokens, 9000 bytes) and 2.0 (step 29, 30 s, 3000, 13000).
  const auto t = time_to_target(curve(), 2.5);
  ASSERT_TRUE(t);
  EXPECT_DOUBLE_EQ(t->step, 24);
  EXPECT_DOUBLE_EQ(t->seconds, 26);
  EXPECT_DOUBLE_EQ(t->tokens, 2500);
  EXPECT_DOUBLE_EQ(t->bytes, 11000);
  // A quarter of the way from 4.0 to 3.0: 10 + 0.25 x 12 s.
  EXPECT_DOUBLE_EQ(time_to_target(curve(), 3.75)->seconds, 13);
  // Met at the first evaluation: its own cost; exactly at an evaluation: that evaluation.
  EXPECT_DOUBLE_EQ(time_to_target(curve(), 4.5)->seconds, 10);
  EXPECT_DOUBLE_EQ(time_to_target(curve(), 3.0)->tokens, 2000);
  EXPECT_FALSE(time_to_target(curve(), 1.9));
  // Within one part in a million of the target: reached (sums in another order), at that evaluation.
  EXPECT_DOUBLE_EQ(time_to_target(curve(), 2.0 - 1e-7)->seconds, 30);
  EXPECT_FALSE(time_to_target(curve(), 2.0 - 1e-4));
  EXPECT_FALSE(time_to_target({}, 3.0));
}

TEST(TimeToTarget, ReadsEvaluationsFromMetricsJsonl) {
  const auto dir = test::scratch_dir();
  // Steps of 2 s and 100 bytes; evaluations at steps 1 and 3.
  test::write_text(dir / "metrics.jsonl",
                   "{\"step\":0,\"loss\":5,\"time_s\":{\"step\":2},\"bytes_sent\":100}\n"
                   "{\"step\":1,\"loss\":4,\"time_s\":{\"step\":2},\"bytes_sent\":100,\"val_loss\":4.5}\n"
                   "{\"step\":2,\"loss\":3,\"time_s\":{\"step\":2},\"bytes_sent\":100}\n"
                   "{\"step\":3,\"loss\":2,\"time_s\":{\"step\":2},\"bytes_sent\":100,\"val_loss\":3.5}\n"
                   "{\"step\":4,\"loss\"");  // cut by a crash
  const auto points = read_eval_points(dir / "metrics.jsonl", 64);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[1].step, 3);
  EXPECT_DOUBLE_EQ(points[1].seconds, 8);
  EXPECT_DOUBLE_EQ(points[1].tokens, 4 * 64);
  EXPECT_DOUBLE_EQ(points[1].bytes, 400);
  // 4.0: halfway from step 1 (4 s, 128 tokens) to step 3 (8 s, 256 tokens).
  const auto t = time_to_target(points, 4.0);
  EXPECT_DOUBLE_EQ(t->seconds, 6);
  EXPECT_DOUBLE_EQ(t->tokens, 192);
}

TEST(SeriesLabels, NameOnlyWhatDiffers) {
  const std::vector<AxisValues> items{
      {{"strategy", "single"}, {"model", "gpt2(preset=gpt2-small-cpu,vocab_size=257)"}, {"train.lr", "2e-3"}},
      {{"strategy", "ring"}, {"model", "gpt2(preset=gpt2-small-cpu,vocab_size=257)"}, {"train.lr", "2e-3"}},
      {{"strategy", "single"}, {"model", "lstm_lm(preset=lstm-small-cpu)"}, {"train.lr", "3e-3"}}};
  const auto labels = distinct_labels(items, "x");
  EXPECT_EQ(labels[0], "strategy=single model=gpt2 lr=2e-3");
  EXPECT_EQ(labels[1], "strategy=ring model=gpt2 lr=2e-3");
  EXPECT_EQ(labels[2], "strategy=single model=lstm_lm lr=3e-3");
  // Options stay when the names alone would merge two items.
  const auto options = distinct_labels({{{"model", "gpt2(preset=a)"}}, {{"model", "gpt2(preset=b)"}}}, "x");
  EXPECT_EQ(options[1], "model=gpt2(preset=b)");
  EXPECT_EQ(distinct_labels({{{"strategy", "ring"}}, {{"strategy", "ring"}}}, "all")[0], "all");
}

}  // namespace
}  // namespace gradsweep
