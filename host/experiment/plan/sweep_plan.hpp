#pragma once
// From an experiment file to the cells to run: expand the matrix, build and validate every cell
// (host schema, plugins and their options, launcher resources, cells that cannot run), resolve it, hash
// it. Every problem of every cell is reported at once, with file:line:column pointing at the key in the
// experiment file (a value that came from the matrix points into the matrix).
#include "experiment/plan/experiment_file.hpp"
#include "experiment/launch/launcher.hpp"
#include "experiment/plan/sweep_matrix.hpp"
#include "runs/plan_file.hpp"

#include "plugins/plugin_registry.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::experiment {

// What plan_sweep makes besides the cells: `run` writes each cell's cell.yaml, `plan` only lists the
// cells (emitting 10^4 YAML texts was a third of its time).
enum class CellFiles { Make, Skip };

// Throws config::ConfigError listing every problem (a sweep of more than `max_cells` cells is one).
// `gradsweep_binary` is what the ranks run.
runs::SweepPlan plan_sweep(const ExperimentFile& experiment, const std::filesystem::path& out_dir,
                           const plugins::PluginRegistry& registry, const std::filesystem::path& gradsweep_binary,
                           std::size_t max_cells = kDefaultMaxCells, CellFiles cell_files = CellFiles::Make);

// The plugin search path of an experiment: its plugins.paths (relative to the file), then the defaults.
std::vector<std::filesystem::path> experiment_plugin_path(const ExperimentFile& experiment);

}  // namespace gradsweep::experiment
