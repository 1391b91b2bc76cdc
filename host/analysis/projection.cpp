#include "analysis/projection.hpp"

#include "runs/planned_cell.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

namespace gradsweep::analysis {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Ranks x threads over the cores of the machine they share (1 when they fit, or when unknown).
double contention(int ranks_on_machine, int threads, int cpus) {
  if (cpus <= 0 || threads <= 0) return 1;
  return std::max(1.0, static_cast<double>(ranks_on_machine) * threads / cpus);
}

StepInputs inputs(const LineProfile& line, int ranks, double contention) {
  StepInputs in;
  in.ranks = ranks;
  in.computing_ranks = std::max(1, ranks - (ranks > 1 ? line.servers : 0));
  in.compute_1_s = line.compute_1_s, in.backward_1_s = line.backward_1_s, in.update_1_s = line.update_1_s;
  in.fixed_s = line.fixed_s, in.contention = contention, in.tokens_per_step = line.tokens_per_step;
  in.bytes = line.bytes(ranks), in.calls = line.calls(ranks), in.overlap = line.overlap;
  return in;
}

std::string text(double v, const char* format = "%.3g") {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, format, v);
  return buffer;
}

class Projector {
 public:
  Projector(const runs::SweepPlan& plan, const ProjectionSetup& setup, const std::string& experiment, Projection& out)
      : plan_(plan), setup_(setup), experiment_(experiment), out_(out) {}

  // The link a configuration's communication crosses, or nullptr (and a missing entry) when it is not known.
  const LinkModel* link(bool inter, bool cell) {
    const LinkModel& l = inter ? setup_.inter : setup_.intra;
    if (l.valid()) return &l;
    if (inter)
      need(cell,
           "inter-node link: fit it from a benchmark on two nodes (docs/projection.md: `gradsweep cluster up --nodes 2 "
           "...`, then `gradsweep cluster exec NAME -- mpirun ... gradsweep bench comm --algorithms ring --json "
           "bench-inter.json`) and give `--bench inter=bench-inter.json`, or give a rate: `gradsweep project " +
               experiment_ + " --links inter=10Gbit@20us`");
    else
      need(cell,
           "intra-node link: `mpirun -np 2 gradsweep bench comm --algorithms ring --json bench-intra.json`, then "
           "`gradsweep project " +
               experiment_ + " --bench intra=bench-intra.json`");
    return nullptr;
  }

  // The prediction of `line` on `ranks` ranks over `nodes` nodes; false when a measurement is missing.
  // `cell`: for a cell of the sweep (what is missing is an error), else for a projected point (a note).
  bool predict(const LineProfile& line, int ranks, bool inter, double c, bool cell, StepPrediction& out) {
    if (line.compute_source.empty()) {
      need(cell, "compute on one rank of " + line.label +
                     ": no one-rank cell of it, or of its model at the same batch "
                     "and precision, finished; add one (`include: [{strategy: ..., nodes: 1}]`) and `gradsweep run " +
                     experiment_ + "`");
      return false;
    }
    if (ranks > 1 && line.traffic_cells == 0) {
      need(cell, "traffic of " + line.label +
                     ": no cell of it on 2+ ranks finished (the matrix needs one): `gradsweep run " + experiment_ +
                     "`");
      return false;
    }
    const LinkModel none;
    const LinkModel* l = ranks > 1 ? link(inter, cell) : &none;
    if (l == nullptr) return false;
    out = predict_step(inputs(line, ranks, c), *l);
    return true;
  }

  void need(bool cell, const std::string& what) {
    auto& list = cell ? out_.missing : out_.notes;
    if (std::find(list.begin(), list.end(), what) == list.end()) list.push_back(what);
  }

 private:
  const runs::SweepPlan& plan_;
  const ProjectionSetup& setup_;
  std::string experiment_;
  Projection& out_;
};

void summarize_errors(Projection& p) {
  std::vector<double> all, multi;
  for (std::size_t i = 0; i < p.cells.size(); ++i) {
    const CellProjection& c = p.cells[i];
    if (!c.predicted || !c.measured) continue;
    all.push_back(std::fabs(c.error));
    if (p.measurements.cells[i].ranks > 1) multi.push_back(std::fabs(c.error));
    p.flagged += c.flagged();
  }
  p.compared = static_cast<int>(all.size()), p.compared_multi_rank = static_cast<int>(multi.size());
  if (!all.empty()) p.median_abs_error = median(all);
  if (!multi.empty()) p.median_abs_error_multi_rank = median(multi);
  // Per node count: each line's median measured and predicted tokens/s (repeats), then tau over the lines.
  std::map<int, std::map<std::string, std::pair<std::vector<double>, std::vector<double>>>> at;
  for (std::size_t i = 0; i < p.cells.size(); ++i) {
    const CellProjection& c = p.cells[i];
    if (!c.predicted || !c.measured) continue;
    auto& v = at[p.measurements.cells[i].nodes][p.measurements.cells[i].line];
    v.first.push_back(c.measured_tokens_per_s), v.second.push_back(c.prediction.tokens_per_s);
  }
  for (const auto& [nodes, lines] : at) {
    std::vector<double> measured, predicted;
    for (const auto& [line, v] : lines) measured.push_back(median(v.first)), predicted.push_back(median(v.second));
    RankingAgreement r;
    r.lines = static_cast<int>(lines.size());
    if (r.lines >= 2) r.tau = kendall_tau(predicted, measured);
    p.ranking[nodes] = r;
  }
}

}  // namespace

double kendall_tau(const std::vector<double>& a, const std::vector<double>& b) {
  long concordant = 0, discordant = 0, pairs = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t j = i + 1; j < a.size(); ++j) {
      const double s = (a[i] - a[j]) * (b[i] - b[j]);
      concordant += s > 0, discordant += s < 0, ++pairs;
    }
  return pairs > 0 ? static_cast<double>(concordant - discordant) / pairs : 0;
}

Projection project(const runs::SweepPlan& plan, const ProjectionSetup& setup, const std::string& experiment) {
  Projection p;
  p.setup = setup;
  p.measurements = read_measurements(plan, setup.pooled_compute);
  Projector projector(plan, setup, experiment, p);
  const auto line_of = [&](const MeasuredCell& m) -> const LineProfile& {
    for (const auto& l : p.measurements.lines)
      if (l.line == m.line) return l;
    return p.measurements.lines.front();  // every cell's line is in the list
  };
  for (const auto& m : p.measurements.cells) {
    const runs::PlannedCell& cell = plan.cells[m.index];
    CellProjection c;
    // As it ran: on one machine its ranks share the cores and (local launcher) the memory, not a network.
    const bool one_machine = m.placement != Placement::Cluster;
    const int cpus = m.cpus > 0 ? m.cpus : p.measurements.cpus;
    const double contention_here = contention(one_machine ? m.ranks : m.ranks_per_node, cell.threads_per_rank, cpus);
    const bool inter = m.placement != Placement::OneMachine && m.nodes > 1;
    c.predicted = projector.predict(line_of(m), m.ranks, inter, contention_here, true, c.prediction);
    c.measured = m.ok && m.tokens_per_s > 0;
    c.measured_tokens_per_s = m.tokens_per_s;
    if (c.predicted && c.measured) c.error = c.prediction.tokens_per_s / m.tokens_per_s - 1;
    p.cells.push_back(c);
  }
  // The configurations at every node count asked, each node a machine of its own.
  const int cores = setup.cores_per_node > 0 ? setup.cores_per_node : p.measurements.cpus;
  for (const auto& line : p.measurements.lines) {
    std::vector<CurvePoint> curve;
    int threads = 0;
    for (const auto& m : p.measurements.cells)
      if (m.line == line.line) threads = std::max(threads, plan.cells[m.index].threads_per_rank);
    for (const int nodes : setup.nodes) {
      CurvePoint point{nodes, nodes * line.ranks_per_node, {}};
      if (projector.predict(line, point.ranks, nodes > 1, contention(line.ranks_per_node, threads, cores), false,
                            point.prediction))
        curve.push_back(point);
    }
    p.curves.push_back(std::move(curve));
  }
  summarize_errors(p);
  return p;
}

nlohmann::json setup_to_json(const ProjectionSetup& setup) {
  nlohmann::json j{{"nodes", setup.nodes},
                   {"cores_per_node", setup.cores_per_node},
                   {"compute", setup.pooled_compute ? "pooled" : "own"}};
  if (setup.intra.valid()) j["intra"] = to_json(setup.intra);
  if (setup.inter.valid()) j["inter"] = to_json(setup.inter);
  return j;
}

std::optional<ProjectionSetup> read_setup(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  ProjectionSetup setup;
  if (j.contains("intra")) setup.intra = link_from_json(j["intra"]);
  if (j.contains("inter")) setup.inter = link_from_json(j["inter"]);
  if (j.contains("nodes")) setup.nodes = j["nodes"].get<std::vector<int>>();
  setup.cores_per_node = j.value("cores_per_node", 0);
  setup.pooled_compute = j.value("compute", "own") == "pooled";
  return setup;
}

nlohmann::json to_json(const Projection& p, const runs::SweepPlan& plan) {
  const auto breakdown = [](const StepPrediction& s) {
    return nlohmann::json{{"tokens_per_s", s.tokens_per_s},
                          {"step_s", s.step_s},
                          {"compute_s", s.compute_s},
                          {"comm_s", s.comm_s},
                          {"exposed_comm_s", s.exposed_comm_s},
                          {"update_s", s.update_s},
                          {"fixed_s", s.fixed_s}};
  };
  nlohmann::json j{{"setup", setup_to_json(p.setup)},
                   {"missing", p.missing},
                   {"not_projected", p.notes},
                   {"lines", nlohmann::json::array()},
                   {"cells", nlohmann::json::array()}};
  for (std::size_t l = 0; l < p.measurements.lines.size(); ++l) {
    const LineProfile& line = p.measurements.lines[l];
    nlohmann::json curve = nlohmann::json::array();
    for (const auto& point : p.curves[l]) {
      auto b = breakdown(point.prediction);
      b["nodes"] = point.nodes, b["ranks"] = point.ranks;
      curve.push_back(b);
    }
    j["lines"].push_back({{"line", line.line},
                          {"label", line.label},
                          {"ranks_per_node", line.ranks_per_node},
                          {"compute_1_s", line.compute_1_s},
                          {"backward_1_s", line.backward_1_s},
                          {"update_1_s", line.update_1_s},
                          {"fixed_s", line.fixed_s},
                          {"compute_source", line.compute_source},
                          {"bytes_fit", {{"ring_shape", line.bytes_ring}, {"star_shape", line.bytes_star}}},
                          {"calls_fit", {{"base", line.calls_base}, {"per_rank", line.calls_per_rank}}},
                          {"overlap", line.overlap},
                          {"servers", line.servers},
                          {"traffic_ranks", line.traffic_ranks},
                          {"curve", curve}});
  }
  for (std::size_t i = 0; i < p.cells.size(); ++i) {
    const CellProjection& c = p.cells[i];
    const MeasuredCell& m = p.measurements.cells[i];
    nlohmann::json cell{
        {"id", plan.cells[i].id}, {"axes", runs::axes_text(plan.cells[i])}, {"nodes", m.nodes}, {"ranks", m.ranks}};
    if (c.predicted) cell["predicted"] = breakdown(c.prediction);
    if (c.measured) cell["measured_tokens_per_s"] = c.measured_tokens_per_s;
    if (c.predicted && c.measured) cell["error"] = c.error, cell["flagged"] = c.flagged();
    j["cells"].push_back(cell);
  }
  nlohmann::json ranking = nlohmann::json::object();
  for (const auto& [nodes, r] : p.ranking)
    ranking[std::to_string(nodes)] = {{"lines", r.lines},
                                      {"kendall_tau", r.tau ? nlohmann::json(*r.tau) : nlohmann::json()}};
  j["summary"] = {{"compared", p.compared},
                  {"compared_multi_rank", p.compared_multi_rank},
                  {"flagged", p.flagged},
                  {"median_abs_error", p.median_abs_error ? nlohmann::json(*p.median_abs_error) : nlohmann::json()},
                  {"median_abs_error_multi_rank",
                   p.median_abs_error_multi_rank ? nlohmann::json(*p.median_abs_error_multi_rank) : nlohmann::json()},
                  {"ranking", ranking}};
  return j;
}

std::string markdown(const Projection& p, const runs::SweepPlan& plan) {
  std::string md;
  const auto percent = [](const std::optional<double>& v) { return v ? text(*v * 100, "%.1f%%") : std::string("-"); };
  md += "Median absolute error of the predicted tokens/s: " + percent(p.median_abs_error) + " over " +
        std::to_string(p.compared) + " cells, " + percent(p.median_abs_error_multi_rank) + " over the " +
        std::to_string(p.compared_multi_rank) + " on 2+ ranks; " + std::to_string(p.flagged) +
        " cells off by more than 20% (**flagged**).\n\n";
  md +=
      "| cell | ranks | measured tokens/s | predicted | error | predicted step ms = compute + exposed comm + "
      "update + fixed | comm ms |\n|---|---|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < p.cells.size(); ++i) {
    const CellProjection& c = p.cells[i];
    const StepPrediction& s = c.prediction;
    md += "| " + runs::axes_text(plan.cells[i]) + " | " + std::to_string(p.measurements.cells[i].ranks) + " | " +
          (c.measured ? text(c.measured_tokens_per_s, "%.0f") : "-") + " | " +
          (c.predicted ? text(s.tokens_per_s, "%.0f") : "-") + " | " +
          (c.predicted && c.measured
               ? (c.flagged() ? "**" + text(c.error * 100, "%+.1f%%") + "**" : text(c.error * 100, "%+.1f%%"))
               : "-") +
          " | " +
          (c.predicted ? text(s.step_s * 1e3, "%.0f") + " = " + text(s.compute_s * 1e3, "%.0f") + " + " +
                             text(s.exposed_comm_s * 1e3, "%.0f") + " + " + text(s.update_s * 1e3, "%.0f") + " + " +
                             text(s.fixed_s * 1e3, "%.0f")
                       : "-") +
          " | " + (c.predicted ? text(s.comm_s * 1e3, "%.1f") : "-") + " |\n";
  }
  md += "\nRanking of the configurations per node count (Kendall tau, predicted vs measured tokens/s): ";
  std::string ranks;
  for (const auto& [nodes, r] : p.ranking)
    ranks += (ranks.empty() ? "" : "; ") + std::to_string(nodes) + " node" + (nodes > 1 ? "s" : "") + ": " +
             (r.tau ? text(*r.tau, "%.2f") : std::string("-")) + " (" + std::to_string(r.lines) + " configurations)";
  md += (ranks.empty() ? "none measured" : ranks) + ".\n";
  if (!p.missing.empty()) {
    md += "\nMissing measurements:\n";
    for (const auto& m : p.missing) md += "- " + m + "\n";
  }
  if (!p.notes.empty()) {
    md += "\nNot projected beyond the cells:\n";
    for (const auto& m : p.notes) md += "- " + m + "\n";
  }
  return md;
}

}  // namespace gradsweep::analysis
