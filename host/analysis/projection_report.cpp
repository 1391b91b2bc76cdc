#include "analysis/projection_report.hpp"

#include "runs/planned_cell.hpp"
#include "analysis/projection.hpp"
#include "util/atomic_file.hpp"

#include <algorithm>
#include <cstdio>

namespace gradsweep::analysis {
namespace {

std::string number_text(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", v);
  return buffer;
}

void add_columns(const Projection& p, ResultsTable& table) {
  const std::vector<std::string> columns{"predicted_tokens_per_s", "predicted_step_s", "predicted_compute_s",
                                         "predicted_exposed_comm_s", "projection_error"};
  for (const auto& c : columns)
    if (std::find(table.columns.begin(), table.columns.end(), c) == table.columns.end()) table.columns.push_back(c);
  for (std::size_t i = 0; i < p.cells.size() && i < table.rows.size(); ++i) {
    const CellProjection& c = p.cells[i];
    if (!c.predicted) continue;
    auto& row = table.rows[i];
    row["predicted_tokens_per_s"] = number_text(c.prediction.tokens_per_s);
    row["predicted_step_s"] = number_text(c.prediction.step_s);
    row["predicted_compute_s"] = number_text(c.prediction.compute_s);
    row["predicted_exposed_comm_s"] = number_text(c.prediction.exposed_comm_s);
    if (c.measured) row["projection_error"] = number_text(c.error);
  }
}

std::vector<Chart> charts(const Projection& p) {
  Chart lines{"projection", "Projected tokens/s (lines; one node per machine) and measured (points)",
              "nodes",      "tokens/s",
              {},           true,
              false,        true};
  lines.log_x = true;
  Chart scatter{"predicted_vs_measured",
                "Predicted vs measured tokens/s (the cells as they ran)",
                "measured tokens/s",
                "predicted tokens/s",
                {},
                true,
                false,
                true};
  double top = 0;
  for (std::size_t l = 0; l < p.measurements.lines.size(); ++l) {
    const LineProfile& line = p.measurements.lines[l];
    ChartSeries curve{line.label + " predicted", {}, {}, "lines"};
    for (const auto& point : p.curves[l]) curve.points.emplace_back(point.nodes, point.prediction.tokens_per_s);
    ChartSeries measured{line.label + " measured", {}, {}, "points"}, cells{line.label, {}, {}, "points"};
    for (std::size_t i = 0; i < p.cells.size(); ++i) {
      const MeasuredCell& m = p.measurements.cells[i];
      if (m.line != line.line || !p.cells[i].measured) continue;
      measured.points.emplace_back(m.nodes, p.cells[i].measured_tokens_per_s);
      if (!p.cells[i].predicted) continue;
      cells.points.emplace_back(p.cells[i].measured_tokens_per_s, p.cells[i].prediction.tokens_per_s);
      top = std::max({top, p.cells[i].measured_tokens_per_s, p.cells[i].prediction.tokens_per_s});
    }
    std::sort(measured.points.begin(), measured.points.end());
    // A configuration's line and its measured points in one colour.
    curve.linetype = measured.linetype = cells.linetype = static_cast<int>(l % 8) + 1;
    if (!curve.points.empty()) lines.series.push_back(std::move(curve));
    if (!measured.points.empty()) lines.series.push_back(std::move(measured));
    if (!cells.points.empty()) scatter.series.push_back(std::move(cells));
  }
  // The diagonal and the +-20% band the flag is drawn from.
  for (const auto& [title, k] : {std::pair<const char*, double>{"exact", 1.0}, {"+20%", 1.2}, {"-20%", 0.8}})
    scatter.series.push_back({title, {{0, 0}, {top * 1.1, top * 1.1 * k}}, {}, "lines"});
  return {lines, scatter};
}

}  // namespace

ProjectionReport add_projection(const runs::SweepPlan& plan, ResultsTable& table) {
  ProjectionReport out;
  const auto setup = read_setup(plan.out_dir / kLinkFitFile);
  out.markdown = "## Projection\n\n";
  if (!setup) {
    out.markdown += "No projection: `" + std::string(kLinkFitFile) +
                    "` (the links' alpha-beta models) is missing. "
                    "Make it with `mpirun -np 2 gradsweep bench comm --algorithms ring --json bench-intra.json` and "
                    "`gradsweep project " +
                    plan.out_dir.string() + " --bench intra=bench-intra.json` (docs/projection.md).\n\n";
    return out;
  }
  const Projection p =
      project(plan, *setup, (plan.out_dir / "experiment.yaml").string() + " --out " + plan.out_dir.string());
  util::write_file_atomically(plan.out_dir / "projection.json", to_json(p, plan).dump(2) + "\n");
  add_columns(p, table);
  out.flagged = p.flagged;
  out.markdown +=
      "Predicted from the one-rank cells' compute, each configuration's measured bytes and calls per step, "
      "and the links in `" +
      std::string(kLinkFitFile) +
      "`; what the model leaves out (contention "
      "beyond the core count, other processes' load, stragglers) shows in the **flagged** cells "
      "(docs/projection.md). All figures: `projection.json`.\n\n" +
      markdown(p, plan) + "\n";
  out.charts = charts(p);
  return out;
}

}  // namespace gradsweep::analysis
