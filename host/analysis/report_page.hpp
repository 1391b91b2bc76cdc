#pragma once
// DIR/report.html: the report as one self-contained page (docs/results.md, "Report page"): the results table
// and the report's sections as sortable tables, the report's charts drawn by Chart.js with hover values,
// the failed cells listed, links to each cell's trace. Chart.js and the page's own script and style
// (report_page/*.js, *.css) are compiled in, so the page needs no network and the binary no files beside it.
// The data goes in as one JSON blob, which report_page/page.js draws.
#include "analysis/gnuplot_chart.hpp"
#include "analysis/report_section.hpp"
#include "analysis/results_table.hpp"
#include "runs/plan_file.hpp"

#include <string>
#include <vector>

namespace gradsweep::analysis {

struct ReportPageContent {
  std::string summary;                  // "3 of 4 cells finished ok."
  std::vector<std::string> warnings;    // shown at the top
  std::vector<ReportSection> sections;  // comparison, time to target, machine load
  std::vector<Chart> charts;            // the same charts as the PNGs
  std::string colour_by;                // "strategy" or "configuration": what the series' colour_key names
};

// The page's HTML. `table` is parallel to the plan's cells (collect_results + the comparison's columns).
std::string report_page_html(const runs::SweepPlan& plan, const ResultsTable& table, const ReportPageContent& content);

}  // namespace gradsweep::analysis
