#pragma once
// `gradsweep report DIR` (and the end of `gradsweep run`): results.csv, the plots, and DIR/report.md
// embedding them.
//
// Plots (DIR/plots/*.png), from the cells that finished ok:
//   throughput.png   tokens/s vs node count, one line per strategy (vs ranks when every cell has one node)
//   efficiency.png   scaling efficiency: tokens/s / (ranks x tokens/s of the one-rank cell of the same model)
//   loss_step.png    training loss vs step, one line per cell
//   loss_time.png    training loss vs wall-clock time (sum of step times), one line per cell
//   bytes.png        bytes sent per step (rank 0) vs node count, per strategy
//   memory.png       peak resident memory (rank 0) vs node count, per strategy
#include "experiment/results_table.hpp"
#include "experiment/sweep_plan.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::experiment {

struct Report {
  ResultsTable table;
  std::string markdown_table;
  std::vector<std::filesystem::path> plots;
  std::string plot_problem;  // why plots are missing ("" when all were drawn)
};

Report write_report(const SweepPlan& plan);

}  // namespace gradsweep::experiment
