#include "experiment/report.hpp"

#include "experiment/cell_status.hpp"
#include "experiment/gnuplot_chart.hpp"
#include "util/atomic_file.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

namespace gradsweep::experiment {
namespace fs = std::filesystem;
namespace {

struct FinishedCell {
  const PlannedCell* cell;
  nlohmann::json summary;
  std::string label;     // axes, for per-cell lines
  std::string group;     // strategy (and model when the sweep has several)
  std::string model_key; // the one-rank baseline is per model
};

std::string axes_label(const PlannedCell& cell) {
  std::string text;
  for (const auto& [k, v] : cell.axes) text += (text.empty() ? "" : " ") + k + "=" + v;
  return text.empty() ? cell.id : text;
}

std::vector<FinishedCell> finished_cells(const SweepPlan& plan) {
  std::vector<FinishedCell> cells;
  for (const auto& cell : plan.cells) {
    if (!is_cell_done(cell.dir, cell.config_hash)) continue;
    std::ifstream in(cell.dir / "summary.json");
    try {
      const auto summary = nlohmann::json::parse(in);
      std::string model = summary.value("model", "?");
      const auto& config = summary.value("config", nlohmann::json::object());
      if (config.contains("model") && config["model"].contains("preset"))
        model += " " + config["model"]["preset"].get<std::string>();
      cells.push_back({&cell, summary, axes_label(cell), summary.value("strategy", "?"), model});
    } catch (const std::exception&) {
    }
  }
  std::set<std::string> models;
  for (const auto& c : cells) models.insert(c.model_key);
  if (models.size() > 1)
    for (auto& c : cells) c.group += " (" + c.model_key + ")";
  return cells;
}

double number(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : NAN;
}

// One series per group, x = nodes (or ranks), y = f(cell); NaN values are left out.
template <class F>
std::vector<ChartSeries> per_group(const std::vector<FinishedCell>& cells, bool by_nodes, F y) {
  std::map<std::string, ChartSeries> groups;
  for (const auto& c : cells) {
    const double value = y(c);
    if (!std::isfinite(value)) continue;
    auto& s = groups[c.group];
    s.title = c.group;
    s.points.emplace_back(by_nodes ? c.cell->nodes : c.cell->world_size(), value);
  }
  std::vector<ChartSeries> out;
  for (auto& [name, s] : groups) {
    std::sort(s.points.begin(), s.points.end());
    out.push_back(std::move(s));
  }
  return out;
}

// (step, loss) and (seconds since the start, loss) from a cell's metrics.jsonl.
std::pair<ChartSeries, ChartSeries> loss_curves(const FinishedCell& c) {
  ChartSeries by_step{c.label, {}}, by_time{c.label, {}};
  std::ifstream in(c.cell->dir / "metrics.jsonl");
  double seconds = 0;
  for (std::string line; std::getline(in, line);) {
    try {
      const auto j = nlohmann::json::parse(line);
      if (j.contains("time_s") && j["time_s"].is_object()) seconds += j["time_s"].value("step", 0.0);
      if (!j.contains("loss") || !j["loss"].is_number()) continue;
      by_step.points.emplace_back(j.value("step", 0), j["loss"].get<double>());
      by_time.points.emplace_back(seconds, j["loss"].get<double>());
    } catch (const std::exception&) {
    }
  }
  return {by_step, by_time};
}

}  // namespace

Report write_report(const SweepPlan& plan) {
  Report report;
  report.table = collect_results(plan);
  write_results_csv(report.table, plan.out_dir / "results.csv");
  report.markdown_table = to_markdown(report.table);

  const auto cells = finished_cells(plan);
  std::set<int> node_counts;
  for (const auto& c : cells) node_counts.insert(c.cell->nodes);
  const bool by_nodes = node_counts.size() > 1;
  const std::string x = by_nodes ? "nodes" : "ranks (one node)";

  // One-rank baseline per model: the mean tokens/s of its one-rank cells.
  std::map<std::string, std::pair<double, int>> base;
  for (const auto& c : cells)
    if (c.cell->world_size() == 1 && std::isfinite(number(c.summary, "tokens_per_sec"))) {
      base[c.model_key].first += number(c.summary, "tokens_per_sec");
      base[c.model_key].second += 1;
    }

  std::vector<Chart> charts;
  charts.push_back({"throughput", "Training throughput", x, "tokens/s",
                    per_group(cells, by_nodes, [](const FinishedCell& c) { return number(c.summary, "tokens_per_sec"); }),
                    true, true});
  charts.push_back({"efficiency", "Scaling efficiency vs one rank", x, "tokens/s / (ranks x one-rank tokens/s)",
                    per_group(cells, by_nodes,
                              [&](const FinishedCell& c) -> double {
                                const auto it = base.find(c.model_key);
                                if (it == base.end()) return NAN;
                                return number(c.summary, "tokens_per_sec") /
                                       (c.cell->world_size() * it->second.first / it->second.second);
                              }),
                    true, true});
  Chart by_step{"loss_step", "Training loss vs step", "step", "loss (nats)", {}, false, false};
  Chart by_time{"loss_time", "Training loss vs wall-clock time", "seconds", "loss (nats)", {}, false, false};
  for (const auto& c : cells) {
    auto [s, t] = loss_curves(c);
    by_step.series.push_back(std::move(s));
    by_time.series.push_back(std::move(t));
  }
  charts.push_back(by_step);
  charts.push_back(by_time);
  charts.push_back({"bytes", "Bytes sent per step (rank 0)", x, "bytes",
                    per_group(cells, by_nodes, [](const FinishedCell& c) { return number(c.summary, "bytes_sent_per_step"); }),
                    true, true});
  charts.push_back({"memory", "Peak resident memory (rank 0)", x, "MiB",
                    per_group(cells, by_nodes, [](const FinishedCell& c) { return number(c.summary, "peak_rss_mb"); }),
                    true, true});

  const fs::path plots_dir = plan.out_dir / "plots";
  for (const auto& chart : charts) {
    try {
      report.plots.push_back(render_chart(chart, plots_dir));
    } catch (const std::exception& e) {
      report.plot_problem = e.what();
      break;
    }
  }

  std::string md = "# Experiment " + plan.name + "\n\n";
  int ok = 0;
  for (const auto& row : report.table.rows) ok += row.at("status") == "ok";
  md += std::to_string(ok) + " of " + std::to_string(plan.cells.size()) +
        " cells finished ok. Every column of every cell: [results.csv](results.csv); per cell: `cells/<id>/`.\n\n";
  md += report.markdown_table + "\n";
  if (!report.plot_problem.empty()) md += "Plots could not be drawn: " + report.plot_problem + "\n";
  for (std::size_t i = 0; i < report.plots.size(); ++i)
    md += "## " + charts[i].title + "\n\n![" + charts[i].title + "](plots/" + report.plots[i].filename().string() + ")\n\n";
  util::write_file_atomically(plan.out_dir / "report.md", md);
  return report;
}

}  // namespace gradsweep::experiment
