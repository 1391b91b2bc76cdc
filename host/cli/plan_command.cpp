#include "cli/plan_command.hpp"

#include "experiment/launch/launcher_local.hpp"
#include "experiment/plan/sweep_setup.hpp"

#include <iostream>
#include <map>
#include <memory>

namespace gradsweep::cli {
using namespace gradsweep::experiment;

namespace {
struct PlanArgs {
  std::string experiment, out;
  std::vector<std::string> overrides;
  std::size_t max_cells = kDefaultMaxCells;
};

std::string resources(const runs::PlannedCell& cell) {
  std::string text = std::to_string(cell.nodes) + "x" + std::to_string(cell.ranks_per_node) + " ranks, " +
                     std::to_string(local_threads_per_rank(cell)) + " thr";
  if (cell.threads_per_rank == 0) text += " (auto)";
  if (cell.gpus_per_node > 0) text += ", " + std::to_string(cell.gpus_per_node) + " GPU/node";
  if (!cell.time_limit.empty()) text += ", time " + cell.time_limit;
  return text;
}
}  // namespace

void register_plan_command(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* cmd =
      app.add_subcommand("plan", "Validate an experiment and list its cells, their resources and which are done");
  cmd->add_option("experiment", args->experiment, "Experiment file (YAML); see docs/experiments.md")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out,-o", args->out, "Output directory (default: runs/<experiment name>)");
  cmd->add_option("--set", args->overrides, "Override a key of the experiment file: --set train.steps=50 (repeatable)");
  cmd->add_option("--max-cells", args->max_cells, "Refuse a sweep of more cells than this")
      ->capture_default_str()  // kDefaultMaxCells, shown as it is
      ->check(CLI::PositiveNumber);
  cmd->callback([args] {
    const LoadedSweep sweep =
        load_sweep(args->experiment, args->out, args->overrides, args->max_cells, CellFiles::Skip);
    const runs::SweepPlan& plan = sweep.plan;
    std::map<std::string, int> counts;
    std::cout << "experiment " << plan.name << " -> " << plan.out_dir.string() << "\n";
    std::cout << "id            state        resources                       axes\n";
    for (const auto& cell : plan.cells) {
      const runs::CellStatus status = runs::current_status(cell);
      const std::string state = status.state == runs::CellState::Ok ? "done" : to_string(status.state);
      ++counts[state];
      std::string res = resources(cell);
      res.resize(std::max<std::size_t>(res.size(), 31), ' ');
      std::string st = state;
      st.resize(12, ' ');
      std::cout << cell.id << "  " << st << " " << res << " " << runs::axes_text(cell) << "\n";
    }
    std::cout << plan.cells.size() << " cell" << (plan.cells.size() == 1 ? "" : "s");
    if (plan.duplicates > 0) std::cout << " (" << plan.duplicates << " duplicate combinations merged)";
    std::cout << ":";
    for (const auto& [state, n] : counts) std::cout << " " << n << " " << state;
    std::cout << "\n";
  });
}

}  // namespace gradsweep::cli
