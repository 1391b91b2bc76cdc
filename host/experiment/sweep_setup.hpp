#pragma once
// What plan, run, status and report share: reading an experiment file into a plan (with the plugins
// the cells name), the default output directory, and each cell's state on disk.
#include "experiment/sweep_plan.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::experiment {

struct LoadedSweep {
  ExperimentFile experiment;
  SweepPlan plan;
};

// Validates everything (throws host::ConfigError listing every problem) and plans the cells under
// `out_dir`, or runs/<experiment name> when empty.
LoadedSweep load_sweep(const std::filesystem::path& experiment_file, const std::string& out_dir,
                       const std::vector<std::string>& overrides, std::size_t max_cells = kDefaultMaxCells,
                       CellFiles cell_files = CellFiles::Make);

// This executable, for the ranks' command lines.
std::filesystem::path self_executable();

// The state a cell is in now: its status.json if it was written for this configuration, else pending.
CellStatus current_status(const PlannedCell& cell);

// "strategy=ring nodes=2"
std::string axes_text(const PlannedCell& cell);

}  // namespace gradsweep::experiment
