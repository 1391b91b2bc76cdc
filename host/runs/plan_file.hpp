#pragma once
// DIR/plan.json: a sweep's planned cells as `gradsweep run` wrote them, and each cell's cell.yaml. What
// `status`, `report` and `project` read: they need the plan, not the experiment file or the plugins
// that made it (host/experiment/plan/sweep_plan.hpp plans).
#include "runs/planned_cell.hpp"

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::runs {

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

// Writes DIR/cells/<id>/cell.yaml for every cell (the plan must have been made with CellFiles::Make) (atomically, only
// when the content changed) and DIR/plan.json.
void write_plan(const SweepPlan& plan, const std::string& experiment_text);

// DIR/plan.json, for `gradsweep status` and `gradsweep report` (throws when missing).
SweepPlan read_plan(const std::filesystem::path& out_dir);

}  // namespace gradsweep::runs
