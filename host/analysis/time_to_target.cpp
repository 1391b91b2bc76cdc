#include "analysis/time_to_target.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>

namespace gradsweep::analysis {

std::vector<EvalPoint> read_eval_points(const std::filesystem::path& metrics_jsonl, double tokens_per_step) {
  std::vector<EvalPoint> points;
  std::ifstream in(metrics_jsonl);
  double seconds = 0, bytes = 0;
  long steps = 0;
  for (std::string line; std::getline(in, line);) {
    // A line cut by a crash is skipped, as the progress display does.
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) continue;
    if (j.contains("time_s") && j["time_s"].is_object()) seconds += j["time_s"].value("step", 0.0);
    if (j.contains("bytes_sent") && j["bytes_sent"].is_number()) bytes += j["bytes_sent"].get<double>();
    const long step = j.value("step", steps);
    steps = step + 1;
    if (!j.contains("val_loss") || !j["val_loss"].is_number()) continue;
    points.push_back({step, j["val_loss"].get<double>(), seconds, static_cast<double>(steps) * tokens_per_step, bytes});
  }
  return points;
}

std::optional<TargetReached> time_to_target(const std::vector<EvalPoint>& points, double target) {
  // Ranks reduce in different orders: the same training ends within ~1e-7 of the baseline's own loss.
  const double reached = target + kTargetTolerance * std::abs(target);
  for (std::size_t i = 0; i < points.size(); ++i) {
    const EvalPoint& b = points[i];
    if (b.val_loss > reached) continue;
    if (i == 0 || points[i - 1].val_loss <= b.val_loss)
      return TargetReached{static_cast<double>(b.step), b.seconds, b.tokens, b.bytes};
    const EvalPoint& a = points[i - 1];
    const double f = std::clamp((a.val_loss - target) / (a.val_loss - b.val_loss), 0.0, 1.0);
    const auto lerp = [f](double x, double y) { return x + f * (y - x); };
    return TargetReached{lerp(a.step, b.step), lerp(a.seconds, b.seconds), lerp(a.tokens, b.tokens),
                         lerp(a.bytes, b.bytes)};
  }
  return std::nullopt;
}

}  // namespace gradsweep::analysis
