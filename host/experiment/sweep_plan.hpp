#pragma once
// From an experiment file to the cells to run: expand the matrix, build and validate every cell
// (host schema, plugins and their options, launcher resources, cells that cannot run), resolve it, hash
// it. Every problem of every cell is reported at once, with file:line:column pointing at the key in the
// experiment file (a value that came from the matrix points into the matrix).
#include "experiment/experiment_file.hpp"
#include "experiment/launcher.hpp"
#include "experiment/sweep_matrix.hpp"

#include "plugins/plugin_registry.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::experiment {

struct SweepPlan {
  std::string name;
  std::filesystem::path out_dir;
  std::vector<std::string> axes;       // axis names, in display order
  std::vector<PlannedCell> cells;      // unique by id, in matrix order
  std::vector<std::string> cell_yaml;  // resolved cell.yaml text, parallel to cells (empty: not asked for)
  int duplicates = 0;                  // points that resolved to a cell already planned
  // How much work the plan took, for the test that keeps planning linear in the cells: cells built (a
  // cell with a problem is built twice, the second time from the file for positions) and cell YAML
  // texts emitted.
  std::size_t cell_builds = 0;
  std::size_t yaml_emits = 0;
};

// What plan_sweep makes besides the cells: `run` writes each cell's cell.yaml, `plan` only lists the
// cells (emitting 10^4 YAML texts was a third of its time).
enum class CellFiles { Make, Skip };

// Throws host::ConfigError listing every problem (a sweep of more than `max_cells` cells is one).
// `gradsweep_binary` is what the ranks run.
SweepPlan plan_sweep(const ExperimentFile& experiment, const std::filesystem::path& out_dir,
                     const host::PluginRegistry& registry, const std::filesystem::path& gradsweep_binary,
                     std::size_t max_cells = kDefaultMaxCells, CellFiles cell_files = CellFiles::Make);

// The plugin search path of an experiment: its plugins.paths (relative to the file), then the defaults.
std::vector<std::filesystem::path> experiment_plugin_path(const ExperimentFile& experiment);

// Writes DIR/cells/<id>/cell.yaml for every cell (the plan must have been made with CellFiles::Make) (atomically, only
// when the content changed) and DIR/plan.json.
void write_plan(const SweepPlan& plan, const std::string& experiment_text);

// DIR/plan.json, for `gradsweep status` and `gradsweep report` (throws when missing).
SweepPlan read_plan(const std::filesystem::path& out_dir);

}  // namespace gradsweep::experiment
