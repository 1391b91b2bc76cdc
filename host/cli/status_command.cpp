#include "cli/status_command.hpp"

#include "experiment/launch/progress_display.hpp"
#include "experiment/slurm/queue_status.hpp"
#include "experiment/plan/sweep_setup.hpp"

#include <iostream>
#include <map>
#include <memory>

namespace gradsweep::cli {
using namespace gradsweep::experiment;

void register_status_command(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd =
      app.add_subcommand("status", "Show the progress of a sweep (its output directory), also while it runs");
  cmd->add_option("dir", *dir, "Output directory of `gradsweep run`")->required()->check(CLI::ExistingDirectory);
  cmd->callback([dir] {
    const runs::SweepPlan plan = runs::read_plan(*dir);
    // Cells handed to Slurm that have not written their outcome: status.json alone would say "running"
    // for a task Slurm has cancelled (queue_status.hpp). Slurm's answer replaces it, and an outcome Slurm
    // knows for sure is written down.
    const slurm::QueueStatus slurm = slurm::ask_slurm_about(plan.cells);
    if (!slurm.problem.empty())
      std::cerr << "warning: could not ask Slurm about the submitted cells, showing their status.json as written: "
                << slurm.problem << "\n";
    std::map<std::string, int> counts;
    std::cout << "experiment " << plan.name << " (" << plan.out_dir.string() << ")\n";
    for (const auto& cell : plan.cells) {
      const auto from_slurm = slurm.cells.find(cell.id);
      const runs::CellStatus status = from_slurm != slurm.cells.end() ? from_slurm->second : runs::current_status(cell);
      ++counts[to_string(status.state)];
      std::string line = cell.id + "  " + to_string(status.state);
      if (status.state == runs::CellState::Running) {
        if (const auto latest = read_latest_step(cell.dir); latest && latest->step >= 0)
          line += " step " + std::to_string(latest->step + 1) + "/" + std::to_string(cell.steps) + ", " +
                  std::to_string(static_cast<long>(latest->tokens_per_sec)) + " tokens/s";
      }
      line += "  " + runs::axes_text(cell);
      if (!status.reason.empty()) line += "\n    " + status.reason;
      std::cout << line << "\n";
    }
    std::cout << plan.cells.size() << " cells:";
    for (const auto& [state, n] : counts) std::cout << " " << n << " " << state;
    std::cout << "\n";
    // Exit 1 while a cell needs another `gradsweep run` (failed, timed out or interrupted); pending and
    // running cells are progress, not a problem (docs/experiments.md, "Exit codes").
    const int stuck = counts["failed"] + counts["timeout"] + counts["interrupted"];
    if (stuck > 0) throw CLI::RuntimeError(1);
  });
}

}  // namespace gradsweep::cli
