#include "analysis/statistics.hpp"

#include <algorithm>
#include <cmath>

namespace gradsweep::analysis {
namespace {

std::vector<double> finite(const std::vector<double>& values) {
  std::vector<double> out;
  for (const double v : values)
    if (std::isfinite(v)) out.push_back(v);
  return out;
}

}  // namespace

double t_quantile_975(int df) {
  // Exact to 3 decimals up to 30 degrees of freedom (any statistics table).
  static const double table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                 2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) df = 1;
  if (df <= 30) return table[df - 1];
  // Beyond 30: the normal quantile with the first two terms of its Cornish-Fisher expansion (error < 1e-3).
  const double z = 1.959964, d = df;
  return z + (z * z * z + z) / (4 * d) + (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * d * d);
}

Summary summarize(const std::vector<double>& raw) {
  std::vector<double> v = finite(raw);
  Summary s;
  s.n = static_cast<int>(v.size());
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const std::size_t mid = v.size() / 2;
  s.median = v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
  double sum = 0;
  for (const double x : v) sum += x;
  s.mean = sum / s.n;
  if (s.n < 2) return s;
  double ss = 0;
  for (const double x : v) ss += (x - s.mean) * (x - s.mean);
  s.stddev = std::sqrt(ss / (s.n - 1));
  const double half = t_quantile_975(s.n - 1) * s.stddev / std::sqrt(static_cast<double>(s.n));
  s.has_interval = true;
  s.low = s.mean - half;
  s.high = s.mean + half;
  return s;
}

RatioSummary paired_ratio(const std::vector<double>& candidate, const std::vector<double>& baseline) {
  std::vector<double> logs;
  for (std::size_t i = 0; i < std::min(candidate.size(), baseline.size()); ++i)
    if (std::isfinite(candidate[i]) && std::isfinite(baseline[i]) && candidate[i] > 0 && baseline[i] > 0)
      logs.push_back(std::log(candidate[i] / baseline[i]));
  RatioSummary r;
  r.rounds = static_cast<int>(logs.size());
  if (logs.empty()) return r;
  const Summary s = summarize(logs);
  r.ratio = std::exp(s.mean);
  if (!s.has_interval) return r;
  r.has_interval = true;
  r.low = std::exp(s.low);
  r.high = std::exp(s.high);
  r.verdict = r.low > 1 ? Verdict::Higher : r.high < 1 ? Verdict::Lower : Verdict::NotResolved;
  return r;
}

std::string verdict_text(Verdict verdict, bool higher_is_better, const std::string& better, const std::string& worse) {
  switch (verdict) {
    case Verdict::Higher: return higher_is_better ? better : worse;
    case Verdict::Lower: return higher_is_better ? worse : better;
    case Verdict::NotResolved: return "not resolved";
    case Verdict::NoInterval: break;
  }
  return "one round: no interval";
}

}  // namespace gradsweep::analysis
