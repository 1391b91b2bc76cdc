#pragma once
// `gradsweep report DIR` (and the end of `gradsweep run`): results.csv, the plots, DIR/report.md embedding
// them, and DIR/report.html, the same report as one self-contained page with interactive charts
// (report_page.hpp).
//
// Plots (DIR/plots/*.png), from the cells that finished ok:
//   throughput.png   tokens/s vs node count (vs ranks when every cell has one node), one line per
//                    configuration, named by what differs (series_labels.hpp); with repeats the median
//                    and its 95% interval as error bars (also efficiency, bytes, memory)
//   efficiency.png   scaling efficiency: tokens/s / (ranks x tokens/s of the one-rank cell of the same model)
//   loss_step.png    training loss vs step, one line per cell; long legends go below the plot
//   loss_time.png    training loss vs wall-clock time (sum of step times), one line per cell
//   bytes.png        bytes sent per step (rank 0) vs node count, per strategy
//   memory.png       peak resident memory (rank 0) vs node count, per strategy
//   step_breakdown.png  where each cell's step goes (stacked bars)
//   overlap.png      comm.overlap (the share of communication hidden behind computation) vs node count
//   projection.png, predicted_vs_measured.png   when DIR/link_fit.json exists (projection/projection_report.hpp)
#include "runs/report_options.hpp"
#include "analysis/results_table.hpp"
#include "runs/plan_file.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::analysis {

struct Report {
  ResultsTable table;
  std::string markdown_table;
  std::vector<std::filesystem::path> plots;
  std::string plot_problem;           // why plots are missing ("" when all were drawn)
  std::string comparison_markdown;    // the comparison and time-to-target sections (comparison_table.hpp)
  std::vector<std::string> warnings;  // target reached by no cell, high machine load
};

// report.md also compares the cell groups with a baseline (comparison.hpp), steered by the experiment's
// `report` section (`file_section`: what host/experiment/plan/report_options_reader.hpp reads from the sweep's
// experiment.yaml) and, over it, by `command_line`. Throws std::invalid_argument for a baseline that is
// not in the sweep, before anything is written.
Report write_report(const runs::SweepPlan& plan, const runs::ReportOptions& file_section = {},
                    const runs::ReportOptions& command_line = {});

}  // namespace gradsweep::analysis
