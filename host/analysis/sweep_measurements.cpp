#include "analysis/sweep_measurements.hpp"
#include "analysis/json_number.hpp"

#include "runs/cell_status.hpp"
#include "analysis/series_labels.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

namespace gradsweep::analysis {
namespace fs = std::filesystem;
namespace {

nlohmann::json read_json(const fs::path& file) {
  std::ifstream in(file);
  if (!in) return nlohmann::json();
  return nlohmann::json::parse(in, nullptr, false);
}

bool is_x_axis(const std::string& axis) { return axis == "nodes" || axis == "ranks_per_node" || axis == "seed"; }

// Axes of where a cell ran rather than of what it computes: a configuration's one-rank compute is the same
// at every link rate and time dilation (one node has no link).
bool is_placement_axis(const std::string& axis) {
  return axis == "link_bandwidth" || axis == "launcher.link.bandwidth" || axis == "dilation" ||
         axis == "launcher.dilation";
}

AxisValues line_axes(const runs::PlannedCell& cell) {
  AxisValues axes;
  for (const auto& kv : cell.axes)
    if (!is_x_axis(kv.first)) axes.push_back(kv);
  return axes;
}

std::string key_of(const AxisValues& axes) {
  std::string key;
  for (const auto& [k, v] : axes) key += (key.empty() ? "" : " ") + k + "=" + v;
  return key.empty() ? "all cells" : key;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A plan written before plan.json recorded the computing ranks: those that spent time computing.
int computing_ranks_measured(const nlohmann::json& breakdown, int ranks) {
  if (!breakdown.contains("by_rank") || !breakdown["by_rank"].contains("compute_s") ||
      !breakdown["by_rank"]["compute_s"].is_array())
    return ranks;
  int computing = 0;
  for (const auto& v : breakdown["by_rank"]["compute_s"]) computing += v.is_number() && v.get<double>() > 0;
  return computing;
}

MeasuredCell measure(const runs::PlannedCell& cell, std::size_t index) {
  MeasuredCell m;
  m.index = index;
  m.line = key_of(line_axes(cell));
  m.nodes = cell.nodes, m.ranks_per_node = cell.ranks_per_node, m.ranks = cell.world_size();
  m.threads_per_rank = cell.threads_per_rank;
  // As the strategy's plan answer declared it (plan.json); older plans are read from what each rank did.
  m.computing_ranks = cell.computing_ranks > 0 ? cell.computing_ranks : m.ranks;
  const runs::CellStatus status = runs::read_cell_status(cell.dir);
  if (status.state != runs::CellState::Ok || status.config_hash != cell.config_hash) return m;
  const nlohmann::json s = read_json(cell.dir / "summary.json");
  if (!s.is_object() || !s.contains("step_breakdown") || !s["step_breakdown"].is_object()) return m;
  m.cpus = static_cast<int>(json_number(read_json(cell.dir / "provenance.json"), "cpus", 0.0));
  m.placement = s.contains("cluster")        ? Placement::Emulated
                : status.launcher == "slurm" ? Placement::Cluster
                                             : Placement::OneMachine;
  m.model = s.value("model", "");
  m.precision = s.value("peak_flops_precision", "");
  m.tokens_per_step = json_number(s, "tokens_per_step", 0.0);
  m.tokens_per_s = json_number(s, "tokens_per_sec", 0.0);
  m.restricts_vocabulary = s.value("restricts_vocabulary", false);
  const nlohmann::json& b = s["step_breakdown"];
  m.compute_s = json_number(b, "compute_s", 0.0);
  m.backward_s = json_number(b, "backward_s", 0.0);
  m.update_s = json_number(b, "update_s", 0.0);
  m.fixed_s = json_number(b, "data_s", 0.0) + json_number(b, "other_s", 0.0) + json_number(b, "unaccounted_s", 0.0);
  if (s.contains("comm")) {
    m.calls = json_number(s["comm"], "calls", 0.0);
    m.overlap = json_number(s["comm"], "overlap", 0.0);
  }
  for (const char* key : {"bytes_sent_per_step_by_rank", "bytes_received_per_step_by_rank"})
    if (s.contains(key) && s[key].is_array())
      for (const auto& v : s[key])
        if (v.is_number()) m.busiest_bytes = std::max(m.busiest_bytes, v.get<double>());
  if (cell.computing_ranks <= 0) m.computing_ranks = computing_ranks_measured(b, m.ranks);
  m.ok = m.tokens_per_step > 0 && m.computing_ranks > 0;
  return m;
}

// The one-rank compute of `line`: its own one-rank cells, else those of the same model, batch and precision
// whose other axes (all but strategy) agree and whose strategy restricts the vocabulary as this one does (a
// sampled softmax computes a fraction of a dense one's: xiao2017's ring was predicted 66-101% too fast from
// a pool that held `sampled`); the median of each figure.
void add_compute(LineProfile& line, const MeasuredCell& sample, const std::vector<MeasuredCell>& cells,
                 const runs::SweepPlan& plan, bool pooled) {
  const auto compute_axes = [&](const MeasuredCell& c, bool with_strategy) {
    AxisValues axes;
    for (const auto& kv : line_axes(plan.cells[c.index]))
      if (!is_placement_axis(kv.first) && (with_strategy || kv.first != "strategy")) axes.push_back(kv);
    return axes;
  };
  const auto others = [&](const MeasuredCell& c) { return compute_axes(c, false); };
  std::vector<const MeasuredCell*> chosen;
  for (const auto& c : cells)
    if (!pooled && c.ok && c.ranks == 1 && compute_axes(c, true) == compute_axes(sample, true)) chosen.push_back(&c);
  const bool own = !chosen.empty();
  if (!own)
    for (const auto& c : cells)
      if (c.ok && c.ranks == 1 && c.model == sample.model && c.tokens_per_step == sample.tokens_per_step &&
          c.precision == sample.precision && c.restricts_vocabulary == sample.restricts_vocabulary &&
          others(c) == others(sample))
        chosen.push_back(&c);
  if (chosen.empty()) return;
  std::vector<double> compute, backward, update, fixed;
  std::string ids;
  for (const auto* c : chosen) {
    compute.push_back(c->compute_s), backward.push_back(c->backward_s), update.push_back(c->update_s);
    fixed.push_back(c->fixed_s);
    ids += (ids.empty() ? "" : ", ") + plan.cells[c->index].id;
  }
  line.compute_1_s = median(compute), line.backward_1_s = median(backward), line.update_1_s = median(update);
  line.fixed_s = median(fixed);
  line.tokens_per_step = sample.tokens_per_step;
  line.compute_source = (own ? "its one-rank cell" : "median of the one-rank cells of the same model") +
                        std::string(chosen.size() > 1 ? "s " : " ") + ids;
}

void add_traffic(LineProfile& line, const std::vector<MeasuredCell>& cells) {
  std::vector<double> f, g, bytes, one, calls;
  double overlap = 0, servers = 0;
  std::set<int> ranks;
  for (const auto& c : cells) {
    if (!c.ok || c.ranks < 2 || c.line != line.line) continue;
    f.push_back((c.ranks - 1.0) / c.ranks), g.push_back(c.ranks - 1.0), bytes.push_back(c.busiest_bytes);
    one.push_back(1.0), calls.push_back(c.calls);
    overlap += c.overlap, servers += c.ranks - c.computing_ranks;
    ranks.insert(c.ranks);
  }
  line.traffic_cells = static_cast<int>(f.size());
  if (f.empty()) return;
  line.traffic_ranks.assign(ranks.begin(), ranks.end());
  // One rank count cannot tell the shapes apart: a ring's, with calls constant, is assumed.
  const bool one_count = ranks.size() < 2;
  std::tie(line.bytes_ring, line.bytes_star) =
      nonnegative_fit(f, one_count ? std::vector<double>(f.size(), 0) : g, bytes);
  std::tie(line.calls_base, line.calls_per_rank) =
      nonnegative_fit(one, one_count ? std::vector<double>(f.size(), 0) : g, calls);
  line.overlap = overlap / line.traffic_cells;
  line.servers = static_cast<int>(std::lround(servers / line.traffic_cells));
}

}  // namespace

double LineProfile::bytes(int ranks) const {
  return ranks < 2 ? 0 : bytes_ring * (ranks - 1.0) / ranks + bytes_star * (ranks - 1.0);
}
double LineProfile::calls(int ranks) const { return ranks < 2 ? 0 : calls_base + calls_per_rank * (ranks - 1.0); }

std::pair<double, double> nonnegative_fit(const std::vector<double>& f, const std::vector<double>& g,
                                          const std::vector<double>& y) {
  double ff = 0, fg = 0, gg = 0, fy = 0, gy = 0;
  for (std::size_t i = 0; i < y.size(); ++i)
    ff += f[i] * f[i], fg += f[i] * g[i], gg += g[i] * g[i], fy += f[i] * y[i], gy += g[i] * y[i];
  const double det = ff * gg - fg * fg;
  if (std::fabs(det) > 1e-12 * ff * gg && ff > 0 && gg > 0) {
    const double a = (fy * gg - gy * fg) / det, b = (ff * gy - fg * fy) / det;
    if (a >= 0 && b >= 0) return {a, b};
  }
  const auto sse = [&](double a, double b) {
    double s = 0;
    for (std::size_t i = 0; i < y.size(); ++i) s += std::pow(y[i] - a * f[i] - b * g[i], 2);
    return s;
  };
  const double a = ff > 0 ? std::max(0.0, fy / ff) : 0, b = gg > 0 ? std::max(0.0, gy / gg) : 0;
  if (gg == 0 || sse(a, 0) <= sse(0, b)) return {a, 0};
  return {0, b};
}

SweepMeasurements read_measurements(const runs::SweepPlan& plan, bool pooled) {
  SweepMeasurements out;
  for (std::size_t i = 0; i < plan.cells.size(); ++i) out.cells.push_back(measure(plan.cells[i], i));
  std::map<std::string, std::size_t> first;  // line -> its first cell, lines in plan order
  std::vector<std::string> order;
  std::vector<AxisValues> items;
  for (const auto& c : out.cells)
    if (first.emplace(c.line, c.index).second) order.push_back(c.line), items.push_back(line_axes(plan.cells[c.index]));
  const auto labels = distinct_labels(items, "all cells");
  for (std::size_t l = 0; l < order.size(); ++l) {
    LineProfile line;
    line.line = order[l], line.label = labels[l];
    const MeasuredCell* sample = nullptr;  // a finished cell of the line, for its model and batch
    for (const auto& c : out.cells) {
      if (c.line != line.line) continue;
      line.ranks_per_node = std::max(line.ranks_per_node, c.ranks_per_node);
      if (c.ok && sample == nullptr) sample = &c;
      if (c.ok && c.ranks == 1 && out.cpus == 0) out.cpus = c.cpus;
    }
    if (sample != nullptr) add_compute(line, *sample, out.cells, plan, pooled);
    add_traffic(line, out.cells);
    out.lines.push_back(std::move(line));
  }
  return out;
}

}  // namespace gradsweep::analysis
