#pragma once
// What plan, run and status share: reading an experiment file into a plan (with the plugins the cells
// name) and the default output directory.
#include "experiment/plan/sweep_plan.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::experiment {

struct LoadedSweep {
  ExperimentFile experiment;
  runs::SweepPlan plan;
};

// Validates everything (throws config::ConfigError listing every problem) and plans the cells under
// `out_dir`, or runs/<experiment name> when empty.
LoadedSweep load_sweep(const std::filesystem::path& experiment_file, const std::string& out_dir,
                       const std::vector<std::string>& overrides, std::size_t max_cells = kDefaultMaxCells,
                       CellFiles cell_files = CellFiles::Make);

// This executable, for the ranks' command lines.
std::filesystem::path self_executable();

}  // namespace gradsweep::experiment
