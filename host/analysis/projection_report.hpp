#pragma once
// The projection's part of `gradsweep report DIR` (docs/projection.md), when DIR/link_fit.json exists
// (`gradsweep project` writes it): the results.csv columns predicted_tokens_per_s, predicted_step_s,
// predicted_compute_s, predicted_exposed_comm_s and projection_error; DIR/projection.json; the charts
// projection.png (measured points on the predicted lines, to the node counts asked) and
// predicted_vs_measured.png; and report.md's section with the error table, the cells off by more than 20%
// flagged. Without the file, the section says how to make it.
#include "analysis/gnuplot_chart.hpp"
#include "analysis/results_table.hpp"
#include "runs/plan_file.hpp"

#include <string>
#include <vector>

namespace gradsweep::analysis {

struct ProjectionReport {
  std::string markdown;       // "## Projection ..." (always present)
  std::vector<Chart> charts;  // empty without a projection
  int flagged = 0;
};

ProjectionReport add_projection(const runs::SweepPlan& plan, ResultsTable& table);

}  // namespace gradsweep::analysis
