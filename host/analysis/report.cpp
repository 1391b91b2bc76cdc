#include "analysis/report.hpp"
#include "analysis/json_number.hpp"

#include "runs/cell_status.hpp"
#include "analysis/comparison_table.hpp"
#include "analysis/gnuplot_chart.hpp"
#include "runs/machine_load.hpp"
#include "analysis/straggler_section.hpp"
#include "analysis/report_page.hpp"
#include "analysis/series_labels.hpp"
#include "analysis/projection_report.hpp"
#include "util/atomic_file.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>

namespace gradsweep::analysis {
namespace fs = std::filesystem;
namespace {

bool is_x_axis(const std::string& axis) { return axis == "nodes" || axis == "ranks_per_node" || axis == "seed"; }

// Per finished cell, the name of its line in the per-configuration charts: what differs between the
// finished cells once the x axis (nodes, ranks) and the seed are left out ("" for the others).
std::vector<std::string> line_names(const runs::SweepPlan& plan, const Comparison& c) {
  std::vector<AxisValues> items;
  std::vector<std::size_t> shown;
  for (std::size_t i = 0; i < plan.cells.size(); ++i) {
    if (!c.cells[i].ok) continue;
    AxisValues axes;
    for (const auto& kv : plan.cells[i].axes)
      if (!is_x_axis(kv.first)) axes.push_back(kv);
    items.push_back(axes);
    shown.push_back(i);
  }
  std::string fallback = "all cells";
  for (const auto& cell : c.cells)
    if (cell.ok) fallback = cell.summary.value("strategy", fallback);
  const auto labels = distinct_labels(items, fallback);
  std::vector<std::string> names(plan.cells.size());
  for (std::size_t k = 0; k < shown.size(); ++k) names[shown[k]] = labels[k];
  return names;
}

// What a cell's colour stands for on the report page, the same in every chart: its strategy when the
// finished cells have several, else its line (what differs between the cells but the x axis and seed).
struct Colours {
  std::string by;                // "strategy" or "configuration"
  std::vector<std::string> key;  // per cell of the plan
};

Colours colours(const runs::SweepPlan& plan, const Comparison& c) {
  Colours out{"strategy", std::vector<std::string>(plan.cells.size())};
  std::set<std::string> strategies;
  for (std::size_t i = 0; i < plan.cells.size(); ++i) {
    std::string strategy = c.cells[i].summary.is_object() ? c.cells[i].summary.value("strategy", "") : "";
    for (const auto& [axis, value] : plan.cells[i].axes)
      if (strategy.empty() && axis == "strategy") strategy = without_options(value);
    out.key[i] = strategy;
    if (c.cells[i].ok) strategies.insert(strategy);
  }
  if (strategies.size() < 2) out = {"configuration", line_names(plan, c)};
  return out;
}

// One series per line name, x = nodes (or ranks), y = the median of f over the cells at that x, with
// error bars (the 95% interval) when some point has two or more values.
template <class F>
std::vector<ChartSeries> per_line(const runs::SweepPlan& plan, const Comparison& c, bool by_nodes, F y) {
  const auto names = line_names(plan, c);
  const auto colour = colours(plan, c);
  std::map<std::string, std::map<double, std::vector<double>>> values;
  std::map<std::string, std::vector<std::string>> cells;
  std::map<std::string, std::string> keys;
  std::vector<std::string> order;
  for (std::size_t i = 0; i < plan.cells.size(); ++i) {
    if (!c.cells[i].ok) continue;
    const double v = y(i);
    if (!std::isfinite(v)) continue;
    if (!values.count(names[i])) order.push_back(names[i]);
    values[names[i]][by_nodes ? plan.cells[i].nodes : plan.cells[i].world_size()].push_back(v);
    cells[names[i]].push_back(plan.cells[i].id);
    keys.emplace(names[i], colour.key[i]);
  }
  bool bars = false;
  for (const auto& [name, xs] : values)
    for (const auto& [x, vs] : xs) bars = bars || vs.size() > 1;
  std::vector<ChartSeries> out;
  for (const auto& name : order) {
    ChartSeries s{name, {}, {}};
    s.colour_key = keys[name];
    s.cells = cells[name];
    for (const auto& [x, vs] : values[name]) {
      const Summary sum = summarize(vs);
      s.points.emplace_back(x, sum.median);
      if (bars)
        s.errors.emplace_back(sum.has_interval ? sum.low : sum.median, sum.has_interval ? sum.high : sum.median);
    }
    out.push_back(std::move(s));
  }
  return out;
}

// (step, loss) and (seconds since the start, loss) from a cell's metrics.jsonl.
std::pair<ChartSeries, ChartSeries> loss_curves(const fs::path& cell_dir, const std::string& label) {
  ChartSeries by_step{label, {}, {}}, by_time{label, {}, {}};
  std::ifstream in(cell_dir / "metrics.jsonl");
  double seconds = 0;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) continue;
    if (j.contains("time_s") && j["time_s"].is_object()) seconds += j["time_s"].value("step", 0.0);
    if (!j.contains("loss") || !j["loss"].is_number()) continue;
    by_step.points.emplace_back(j.value("step", 0), j["loss"].get<double>());
    by_time.points.emplace_back(seconds, j["loss"].get<double>());
  }
  return {by_step, by_time};
}

// The loss charts: one line per finished cell, named by what differs between the cells (a repetition
// with the same seed gets its round).
void add_loss_charts(const runs::SweepPlan& plan, const Comparison& c, std::vector<Chart>& charts) {
  std::vector<AxisValues> items;
  std::vector<std::size_t> shown;
  for (std::size_t i = 0; i < plan.cells.size(); ++i)
    if (c.cells[i].ok) {
      items.push_back(plan.cells[i].axes);
      shown.push_back(i);
    }
  auto labels = distinct_labels(items, "cell");
  std::map<std::string, int> uses;
  for (const auto& l : labels) ++uses[l];
  Chart by_step{"loss_step", "Training loss vs step", "step", "loss (nats)", {}, false, false};
  Chart by_time{"loss_time", "Training loss vs wall-clock time", "seconds", "loss (nats)", {}, false, false};
  const auto colour = colours(plan, c);
  for (std::size_t k = 0; k < shown.size(); ++k) {
    const std::size_t i = shown[k];
    const std::string label =
        uses[labels[k]] > 1 ? labels[k] + " run " + std::to_string(c.cells[i].round + 1) : labels[k];
    auto [s, t] = loss_curves(plan.cells[i].dir, label);
    for (auto* series : {&s, &t}) {
      series->colour_key = colour.key[i];
      series->cells = {plan.cells[i].id};
    }
    by_step.series.push_back(std::move(s));
    by_time.series.push_back(std::move(t));
  }
  charts.push_back(by_step);
  charts.push_back(by_time);
}

// Where each finished cell's step goes (summary.json's step_breakdown, means over its ranks), one stacked bar
// per cell, labelled by what differs between the cells.
Chart step_breakdown_chart(const runs::SweepPlan& plan, const Comparison& c) {
  Chart chart{"step_breakdown", "Step time by part (mean over ranks)", "cell", "ms per step", {}, false, false};
  chart.stacked = true;
  const std::vector<std::pair<const char*, std::vector<const char*>>> parts{
      {"compute", {"compute_s"}},
      {"exposed comm", {"exposed_comm_s"}},
      {"wait for ranks", {"wait_s"}},
      {"update", {"update_s"}},
      {"data + other", {"data_s", "other_s", "unaccounted_s"}}};
  for (const auto& [title, keys] : parts) chart.series.push_back({title, {}, {}});
  std::vector<AxisValues> items;
  std::vector<std::size_t> shown;
  for (std::size_t i = 0; i < plan.cells.size(); ++i)
    if (c.cells[i].ok && c.cells[i].summary.contains("step_breakdown")) {
      items.push_back(plan.cells[i].axes);
      shown.push_back(i);
    }
  chart.bar_labels = distinct_labels(items, "cell");
  for (std::size_t k = 0; k < shown.size(); ++k) {
    for (auto& s : chart.series) s.cells.push_back(plan.cells[shown[k]].id);
    const nlohmann::json& b = c.cells[shown[k]].summary["step_breakdown"];
    for (std::size_t p = 0; p < parts.size(); ++p) {
      double ms = 0;
      for (const char* key : parts[p].second) ms += b.value(key, 0.0) * 1e3;
      chart.series[p].points.emplace_back(static_cast<double>(k), ms);
    }
  }
  return chart;
}

std::vector<Chart> build_charts(const runs::SweepPlan& plan, const Comparison& c) {
  std::set<int> node_counts;
  for (std::size_t i = 0; i < plan.cells.size(); ++i)
    if (c.cells[i].ok) node_counts.insert(plan.cells[i].nodes);
  const bool by_nodes = node_counts.size() > 1;
  const std::string x = by_nodes ? "nodes" : "ranks (one node)";
  const auto metric = [&](const char* key) {
    return [&c, key](std::size_t i) { return json_number(c.cells[i].summary, key); };
  };

  // One-rank baselines: per line (the same configuration on one rank: a strategy's own scaling), and per
  // model for lines without a one-rank cell (e.g. ring, measured against single): mean tokens/s.
  std::map<std::string, std::pair<double, int>> base, line_base;
  const auto model_of = [&](std::size_t i) { return c.cells[i].summary.value("model", "?"); };
  const auto names = line_names(plan, c);
  for (std::size_t i = 0; i < plan.cells.size(); ++i)
    if (c.cells[i].ok && plan.cells[i].world_size() == 1 &&
        std::isfinite(json_number(c.cells[i].summary, "tokens_per_sec"))) {
      for (auto* b : {&base[model_of(i)], &line_base[names[i]]}) {
        b->first += json_number(c.cells[i].summary, "tokens_per_sec");
        b->second += 1;
      }
    }
  std::vector<Chart> charts;
  auto throughput = per_line(plan, c, by_nodes, metric("tokens_per_sec"));
  const bool bars = !throughput.empty() && !throughput.front().errors.empty();
  charts.push_back({"throughput", bars ? "Training throughput (median, 95% interval)" : "Training throughput", x,
                    "tokens/s", std::move(throughput), true, true, true});
  charts.push_back({"efficiency", "Scaling efficiency vs one rank", x, "tokens/s / (ranks x one-rank tokens/s)",
                    per_line(plan, c, by_nodes,
                             [&](std::size_t i) -> double {
                               auto it = line_base.find(names[i]);
                               if (it == line_base.end()) {
                                 it = base.find(model_of(i));
                                 if (it == base.end()) return NAN;
                               }
                               return json_number(c.cells[i].summary, "tokens_per_sec") /
                                      (plan.cells[i].world_size() * it->second.first / it->second.second);
                             }),
                    true, true, true});
  add_loss_charts(plan, c, charts);
  charts.push_back({"bytes", "Bytes sent per step (rank 0)", x, "bytes",
                    per_line(plan, c, by_nodes, metric("bytes_sent_per_step")), true, true, true});
  charts.push_back({"memory", "Peak resident memory (rank 0)", x, "MiB",
                    per_line(plan, c, by_nodes, metric("peak_rss_mb")), true, true, true});
  charts.push_back(step_breakdown_chart(plan, c));
  charts.push_back({"overlap", "Communication hidden behind computation (comm.overlap, rank 0)", x,
                    "overlap (1 - blocked / busy)",
                    per_line(plan, c, by_nodes,
                             [&c](std::size_t i) {
                               const nlohmann::json& s = c.cells[i].summary;
                               return s.contains("comm") ? json_number(s["comm"], "overlap") : NAN;
                             }),
                    true, true, true});
  return charts;
}

// "Machine load" when other processes took a quarter of the cores or more during some cells.
std::optional<ReportSection> load_section(const runs::SweepPlan& plan, const Comparison& c,
                                          std::vector<std::string>& warnings) {
  int high = 0, known = 0;
  double worst = 0;
  std::string worst_id;
  for (std::size_t i = 0; i < plan.cells.size(); ++i) {
    if (!c.cells[i].ok) continue;
    std::ifstream in(plan.cells[i].dir / "provenance.json");
    const auto j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_object() || !j.contains("load") || !j["load"].contains("other_cores")) continue;
    ++known;
    const double other = j["load"]["other_cores"].get<double>();
    if (runs::load_was_high(j["load"], j.value("cpus", 1))) ++high;
    if (other > worst) worst = other, worst_id = plan.cells[i].id;
  }
  if (high == 0) return std::nullopt;
  char text[160];
  std::snprintf(text, sizeof text,
                "%d of %d cells ran while other processes used a quarter of the cores or more "
                "(the most: %.2f cores during cell %s)",
                high, known, worst, worst_id.c_str());
  warnings.push_back(std::string("machine load was high: ") + text);
  return ReportSection{"Machine load",
                       "**" + std::string(text) +
                           ".** Their speed figures are noisier than the others'; "
                           "the intervals above include that noise only when it hit every repeat alike. `load` in "
                           "`cells/<id>/provenance.json` has the figures.",
                       {},
                       {},
                       ""};
}

}  // namespace

Report write_report(const runs::SweepPlan& plan, const runs::ReportOptions& file_section,
                    const runs::ReportOptions& command_line) {
  // The experiment file's report section, with the command line's values over it.
  runs::ReportOptions options = file_section;
  std::string baseline_source = "report.baseline", target_source = "report.target_loss";
  if (!command_line.baseline.empty()) options.baseline = command_line.baseline, baseline_source = "--baseline";
  if (command_line.target_loss) options.target_loss = command_line.target_loss, target_source = "--target-loss";
  // Before anything is written: a bad --baseline leaves the previous report as it was. A bad baseline in
  // the experiment file does not cost the report at the end of a long run: it falls back to the first
  // group, with a warning.
  Report report;
  Comparison comparison;
  try {
    comparison = compare_cells(plan, options, baseline_source, target_source);
  } catch (const std::invalid_argument& e) {
    if (baseline_source == "--baseline") throw;
    report.warnings.push_back(std::string(e.what()) + "; comparing with the first group instead");
    options.baseline.clear();
    comparison = compare_cells(plan, options, baseline_source, target_source);
  }

  report.table = collect_results(plan);
  add_comparison_columns(report.table, comparison);
  const analysis::ProjectionReport projected = analysis::add_projection(plan, report.table);
  report.markdown_table = to_markdown(report.table);
  ReportPageContent page;
  page.sections = comparison_sections(comparison);
  for (const auto& section : page.sections) report.comparison_markdown += section_markdown(section);
  if (std::isfinite(comparison.target_loss)) {
    bool reached = false;
    for (const auto& g : comparison.groups) reached = reached || g.reached > 0;
    char target[32];
    std::snprintf(target, sizeof target, "%.4g", comparison.target_loss);
    if (!reached)
      report.warnings.push_back(std::string("no cell reached the target val loss ") + target + " (" +
                                comparison.target_source + ")");
  }

  auto charts = build_charts(plan, comparison);
  charts.insert(charts.end(), projected.charts.begin(), projected.charts.end());
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
  page.summary = std::to_string(ok) + " of " + std::to_string(plan.cells.size()) + " cells finished ok.";
  md += page.summary +
        " Every column of every cell: [results.csv](results.csv); per cell: `cells/<id>/`; this report with "
        "interactive charts: [report.html](report.html).\n\n";
  md += report.markdown_table + "\n";
  md += report.comparison_markdown;
  md += projected.markdown;
  if (const auto stragglers = straggler_section(plan, comparison)) {
    md += section_markdown(*stragglers);
    page.sections.push_back(*stragglers);
  }
  if (const auto load = load_section(plan, comparison, report.warnings)) {
    md += section_markdown(*load);
    page.sections.push_back(*load);
  }
  if (!report.plot_problem.empty()) md += "Plots could not be drawn: " + report.plot_problem + "\n";
  for (std::size_t i = 0; i < report.plots.size(); ++i)
    md += "## " + charts[i].title + "\n\n![" + charts[i].title + "](plots/" + report.plots[i].filename().string() +
          ")\n\n";
  page.warnings = report.warnings;
  page.charts = std::move(charts);
  page.colour_by = colours(plan, comparison).by;
  write_results_csv(report.table, plan.out_dir / "results.csv");
  util::write_file_atomically(plan.out_dir / "report.md", md);
  util::write_file_atomically(plan.out_dir / "report.html", report_page_html(plan, report.table, page));
  return report;
}

}  // namespace gradsweep::analysis
