#include "analysis/link_fit.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <utility>

namespace gradsweep::analysis {
namespace {

double hops(int ranks) { return 2.0 * (ranks - 1); }
double bytes_sent(double bytes, int ranks) { return 2.0 * (ranks - 1) / ranks * bytes; }

// "<number><unit>" -> value x the unit's scale; throws with `what` when the unit is not in `units`.
double scaled(const std::string& text, const std::vector<std::pair<std::string, double>>& units, const char* what) {
  std::size_t end = 0;
  double value = 0;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  const std::string unit = end == 0 ? "" : text.substr(end);
  for (const auto& [name, scale] : units)
    if (end > 0 && unit == name && value > 0) return value * scale;
  throw std::invalid_argument("link '" + text + "': expected " + what);
}

}  // namespace

double LinkModel::seconds(double bytes, double calls, int ranks) const {
  if (ranks < 2 || !valid()) return 0;
  return calls * hops(ranks) * alpha_s + bytes / beta_bytes_per_s;
}

double LinkModel::rms_residual_s() const {
  if (points.empty()) return 0;
  double sum = 0;
  for (const auto& p : points) sum += p.residual() * p.residual();
  return std::sqrt(sum / points.size());
}

LinkModel fit_link(std::vector<LinkPoint> points) {
  // Least squares of T = alpha x1 + gamma x2 (gamma = 1/beta) through the origin of (x1, x2).
  double s11 = 0, s12 = 0, s22 = 0, t1 = 0, t2 = 0;
  for (const auto& p : points) {
    const double x1 = hops(p.ranks), x2 = bytes_sent(p.bytes, p.ranks);
    s11 += x1 * x1, s12 += x1 * x2, s22 += x2 * x2, t1 += x1 * p.seconds, t2 += x2 * p.seconds;
  }
  const double det = s11 * s22 - s12 * s12;
  if (points.size() < 2 || !(std::fabs(det) > 1e-12 * s11 * s22))
    throw std::invalid_argument("link fit: " + std::to_string(points.size()) +
                                " point(s) of too few distinct sizes; a fit needs at least two sizes on 2+ ranks");
  double alpha = (t1 * s22 - t2 * s12) / det, gamma = (s11 * t2 - s12 * t1) / det;
  if (alpha < 0) alpha = 0, gamma = t2 / s22;  // latency cannot be negative: bandwidth alone
  if (!(gamma > 0))
    throw std::invalid_argument(
        "link fit: the time does not grow with the size (bandwidth would be infinite or "
        "negative); measure larger sizes (--max-bytes)");
  LinkModel link;
  link.alpha_s = alpha;
  link.beta_bytes_per_s = 1.0 / gamma;
  for (auto& p : points) p.predicted = link.seconds(bytes_sent(p.bytes, p.ranks), 1, p.ranks);
  link.points = std::move(points);
  return link;
}

std::vector<LinkPoint> read_bench_points(const std::filesystem::path& file, const std::string& algorithm) {
  std::ifstream in(file);
  if (!in) throw std::invalid_argument("bench file " + file.string() + ": cannot be read");
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || !j.contains("results") || !j.contains("ranks"))
    throw std::invalid_argument("bench file " + file.string() + ": not the JSON of `gradsweep bench comm --json`");
  if (j.value("collective", "") != "allreduce")
    throw std::invalid_argument("bench file " + file.string() + ": collective is '" + j.value("collective", "") +
                                "'; the link fit needs allreduce");
  std::vector<LinkPoint> points;
  for (const auto& r : j["results"]) {
    if (!r.contains(algorithm)) continue;
    points.push_back(
        {j["ranks"].get<int>(), r["bytes"].get<double>(), r[algorithm]["time_us"].get<double>() * 1e-6, 0});
  }
  if (points.empty())
    throw std::invalid_argument("bench file " + file.string() + ": no timings of the '" + algorithm +
                                "' algorithm (run bench comm with --algorithms " + algorithm + ")");
  return points;
}

LinkModel parse_link_text(const std::string& text) {
  const auto at = text.find('@');
  const std::string rate = text.substr(0, at);
  LinkModel link;
  link.beta_bytes_per_s = scaled(rate,
                                 {{"bit", 1.0 / 8},
                                  {"kbit", 1e3 / 8},
                                  {"Mbit", 1e6 / 8},
                                  {"Gbit", 1e9 / 8},
                                  {"Tbit", 1e12 / 8},
                                  {"MB/s", 1e6},
                                  {"GB/s", 1e9}},
                                 "a rate such as 10Gbit, 100Mbit or 2GB/s, optionally @ a latency such as @5us");
  if (at != std::string::npos)
    link.alpha_s = scaled(text.substr(at + 1), {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}},
                          "a latency such as 5us, 1ms or 200ns after '@'");
  link.source = "given: " + text;
  return link;
}

nlohmann::json to_json(const LinkModel& link) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : link.points)
    points.push_back({{"ranks", p.ranks},
                      {"bytes", p.bytes},
                      {"seconds", p.seconds},
                      {"predicted_s", p.predicted},
                      {"residual_s", p.residual()},
                      {"relative_residual", p.seconds > 0 ? p.residual() / p.seconds : 0}});
  return {{"alpha_s", link.alpha_s},
          {"beta_bytes_per_s", link.beta_bytes_per_s},
          {"source", link.source},
          {"rms_residual_s", link.rms_residual_s()},
          {"points", points}};
}

LinkModel link_from_json(const nlohmann::json& j) {
  LinkModel link;
  link.alpha_s = j.value("alpha_s", 0.0);
  link.beta_bytes_per_s = j.value("beta_bytes_per_s", 0.0);
  link.source = j.value("source", "");
  if (j.contains("points"))
    for (const auto& p : j["points"])
      link.points.push_back(
          {p.value("ranks", 2), p.value("bytes", 0.0), p.value("seconds", 0.0), p.value("predicted_s", 0.0)});
  return link;
}

}  // namespace gradsweep::analysis
