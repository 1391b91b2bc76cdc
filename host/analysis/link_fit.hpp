#pragma once
// The alpha-beta model of one class of link (intra-node: shared memory or a node's fabric; inter-node: the
// network), fitted to `gradsweep bench comm --json` runs of the ring allreduce: a ring allreduce of S
// bytes over p ranks takes
//
//   T(S, p) = 2(p-1) alpha + 2(p-1)/p S / beta
//
// (p-1 reduce-scatter and p-1 all-gather hops, each paying the latency alpha, and the bytes each rank
// sends, 2(p-1)/p S, at beta bytes/s). The fit is least squares over every (size, ranks) point of the
// files given, in absolute seconds; each point keeps its prediction and residual, stored with the fit, so
// a reader sees where the straight line misses (the smallest sizes, where a loaded machine's scheduler
// dominates, usually).
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::analysis {

struct LinkPoint {
  int ranks = 2;
  double bytes = 0;      // S, the allreduce's size
  double seconds = 0;    // measured
  double predicted = 0;  // by the fit
  double residual() const { return seconds - predicted; }
};

struct LinkModel {
  double alpha_s = 0;             // latency per hop
  double beta_bytes_per_s = 0;    // bandwidth per rank and direction
  std::string source;             // "fit of FILE, FILE" or "--links inter=10Gbit@5us"
  std::vector<LinkPoint> points;  // empty for a model given on the command line
  bool valid() const { return beta_bytes_per_s > 0; }
  // Seconds to move `bytes` (one rank's bytes in one direction) over `ranks` in `calls` collectives.
  double seconds(double bytes, double calls, int ranks) const;
  double rms_residual_s() const;
};

// Fits alpha and beta to the points (at least two distinct x); throws std::invalid_argument when they do
// not determine the line or give a non-positive bandwidth. A negative alpha is clipped to 0 and beta
// refitted alone.
LinkModel fit_link(std::vector<LinkPoint> points);

// The ring (or `algorithm`) timings of a `bench comm --json` file, one point per size.
std::vector<LinkPoint> read_bench_points(const std::filesystem::path& file, const std::string& algorithm);

// "10Gbit", "25Gbit@5us", "2GB/s@1ms": a rate (kbit, Mbit, Gbit: bits/s; MB/s, GB/s: bytes/s) and an optional latency
// (s, ms, us, ns). Throws std::invalid_argument naming the text and the accepted forms.
LinkModel parse_link_text(const std::string& text);

nlohmann::json to_json(const LinkModel& link);
LinkModel link_from_json(const nlohmann::json& j);

}  // namespace gradsweep::analysis
