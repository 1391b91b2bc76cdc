#pragma once
// Summaries of repeated measurements, for the report's comparisons.
//
// Intervals are Student-t 95% intervals: of the mean for one group, of the geometric mean of the
// per-round ratios for a pair (a t interval on log(ratio), exponentiated). t, not bootstrap: with the
// 3-5 repeats a sweep can afford, a percentile bootstrap covers far less than 95% (at n = 3 it is the
// range of the data), while t is exact for normal noise; being closed-form, reports are reproducible.
// Fewer than two values give no interval at all (`has_interval` false), never a made-up one.
#include <optional>
#include <string>
#include <vector>

namespace gradsweep::analysis {

struct Summary {
  int n = 0;
  double median = 0, mean = 0, stddev = 0;  // stddev: sample (n - 1)
  bool has_interval = false;                // n >= 2
  double low = 0, high = 0;                 // 95% interval of the mean
};

// NaN values are left out.
Summary summarize(const std::vector<double>& values);

// The 0.975 quantile of Student's t with `df` degrees of freedom (df >= 1).
double t_quantile_975(int df);

enum class Verdict { Higher, Lower, NotResolved, NoInterval };

struct RatioSummary {
  int rounds = 0;             // pairs used
  double ratio = 0;           // geometric mean of candidate / baseline over the rounds
  bool has_interval = false;  // rounds >= 2
  double low = 0, high = 0;   // 95% interval of the ratio
  Verdict verdict = Verdict::NoInterval;
};

// Pairs candidate[i] with baseline[i] (the same round); pairs with a NaN or non-positive value are
// dropped. Higher: the whole interval is above 1; Lower: below 1.
RatioSummary paired_ratio(const std::vector<double>& candidate, const std::vector<double>& baseline);

// "faster", "slower", "not resolved", "one round: no interval"; `higher_is_better` says which way a
// ratio above 1 goes (tokens/s: true; step time, loss: false: a lower step time is faster).
std::string verdict_text(Verdict verdict, bool higher_is_better, const std::string& better = "faster",
                         const std::string& worse = "slower");

}  // namespace gradsweep::analysis
