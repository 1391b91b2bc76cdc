#include "cli/run_command.hpp"

#include "experiment/launch/launcher_local.hpp"
#include "experiment/launch/progress_display.hpp"
#include "experiment/plan/report_options_reader.hpp"
#include "analysis/report.hpp"
#include "experiment/launch/run_lock.hpp"
#include "experiment/slurm/slurm_launcher.hpp"
#include "experiment/plan/sweep_setup.hpp"
#include "experiment/plan/tensorboard_experiment.hpp"
#include "tracking/cell_fields.hpp"
#include "tracking/report_run.hpp"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <iostream>
#include <memory>

namespace gradsweep::cli {
using namespace gradsweep::experiment;
using namespace gradsweep::analysis;
namespace fs = std::filesystem;

namespace {

struct RunArgs {
  std::string experiment, out, launcher = "local";
  std::vector<std::string> overrides;
  std::size_t max_cells = kDefaultMaxCells;
  bool retry_failed = false, force = false, fail_fast = false, dry_run = false, no_wait = false;
};

// Exit codes (docs/experiments.md): 0 when every cell of the sweep is done; kSomeFailed while any cell is
// failed or timed out, whether it failed in this run or was left alone from an earlier one, so that a
// script can tell the sweep is incomplete; kInterrupted when stopped (Ctrl-C, as shells report SIGINT).
constexpr int kSomeFailed = 1;
constexpr int kInterrupted = 130;

// The sweep's state after this run, as the last line says it: "sweep incomplete: 1 of 3 cells failed".
int sweep_exit_code(const runs::SweepPlan& plan) {
  int failed = 0, ok = 0;
  for (const auto& cell : plan.cells) {
    const runs::CellState state = runs::current_status(cell).state;
    failed += state == runs::CellState::Failed || state == runs::CellState::Timeout;
    ok += state == runs::CellState::Ok;
  }
  const int total = static_cast<int>(plan.cells.size());
  if (failed > 0) {
    std::cerr << "sweep incomplete: " << failed << " of " << total
              << " cells failed or timed out (`gradsweep run --retry-failed` reruns them)\n";
    return kSomeFailed;
  }
  if (ok == total) std::cerr << "sweep complete: all " << total << " cells done\n";
  return 0;  // the rest are submitted to Slurm (--no-wait) and followed with `gradsweep status`
}

std::atomic<bool> g_stop{false};
extern "C" void request_stop(int) { g_stop.store(true); }

// Ctrl-C / SIGTERM ask the launcher to stop the running cell cleanly; a second Ctrl-C does the same
// (the launcher escalates to SIGKILL after its grace period).
void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = request_stop;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

std::unique_ptr<Launcher> make_launcher(const std::string& name, const fs::path& out_dir) {
  if (name == "local") return std::make_unique<LocalLauncher>();
  SlurmLauncherOptions options;
  options.out_dir = out_dir;
  options.messages = &std::cerr;
  return make_slurm_launcher(options);
}

// Which cells to launch, and why the others are not launched.
std::vector<runs::PlannedCell> cells_to_run(const runs::SweepPlan& plan, const RunArgs& args, int& done,
                                            int& skipped_failed) {
  std::vector<runs::PlannedCell> cells;
  for (const auto& cell : plan.cells) {
    const runs::CellStatus status = runs::read_cell_status(cell.dir);
    const bool same_config = status.config_hash.empty() || status.config_hash == cell.config_hash;
    runs::PlannedCell c = cell;
    if (args.force || !same_config) {
      // From scratch: a checkpoint of another configuration (or one the user wants redone) is not resumed.
      c.rank_command.push_back("--fresh");
      cells.push_back(std::move(c));
      continue;
    }
    if (status.state == runs::CellState::Ok) {
      ++done;
      continue;
    }
    if ((status.state == runs::CellState::Failed || status.state == runs::CellState::Timeout) && !args.retry_failed) {
      ++skipped_failed;
      continue;
    }
    cells.push_back(std::move(c));  // pending, interrupted, running (a driver that died), or retried
  }
  return cells;
}

// A tracked sweep's report also goes to MLflow; like the cells' tracking, a server that fails costs a
// warning, never the sweep's results or its exit status.
void push_report_if_tracked(const fs::path& out_dir) {
  const std::string uri = tracking::sweep_tracking_uri(out_dir);
  if (uri.empty()) return;
  try {
    tracking::push_report(tracking::MlflowClient(uri), out_dir);
  } catch (const std::exception& e) {
    std::cerr << "warning: the report was not sent to MLflow (" << e.what() << "); `gradsweep report "
              << out_dir.string() << " --push` sends it later\n";
  }
}

int run_sweep(const RunArgs& args) {
  if (args.force && args.retry_failed)
    throw std::runtime_error("--force already reruns every cell; drop --retry-failed");
  const LoadedSweep sweep = load_sweep(args.experiment, args.out, args.overrides, args.max_cells);
  const runs::SweepPlan& plan = sweep.plan;
  if (args.launcher == "slurm")
    for (const auto& cell : plan.cells)
      if (cell.emulated.enabled)
        throw std::runtime_error(
            "launcher.name: emulated: cells on an emulated cluster run on this machine, not "
            "through Slurm; drop --launcher slurm (or set launcher.name: local)");
  const RunLock lock(plan.out_dir);  // before anything in DIR is written
  std::string experiment_text = sweep.experiment.text;
  for (const auto& o : args.overrides) experiment_text += "\n# --set " + o;
  runs::write_plan(plan, experiment_text + "\n");
  write_tensorboard_experiment(plan);
  // Each cell's MLflow run goes into the experiment named after the sweep (train/mlflow_log.hpp).
  for (const runs::PlannedCell& cell : plan.cells) tracking::write_sweep_name(cell.dir, plan.name);

  int done = 0, skipped_failed = 0;
  const std::vector<runs::PlannedCell> cells = cells_to_run(plan, args, done, skipped_failed);
  std::cerr << "experiment " << plan.name << ": " << plan.cells.size() << " cells, " << done << " done, "
            << cells.size() << " to run";
  if (skipped_failed > 0) std::cerr << ", " << skipped_failed << " failed left alone (--retry-failed reruns them)";
  std::cerr << " -> " << plan.out_dir.string() << "\n";

  std::unique_ptr<Launcher> launcher = make_launcher(args.launcher, plan.out_dir);
  install_stop_handlers();
  LaunchOptions options;
  options.fail_fast = args.fail_fast;
  options.dry_run = args.dry_run;
  options.wait = !args.no_wait;
  options.stop_requested = &g_stop;
  ProgressDisplay progress(std::cerr, static_cast<int>(plan.cells.size()), done, ::isatty(STDERR_FILENO) == 1);
  const LaunchResult result = launcher->run(cells, options, progress);

  if (args.dry_run) {
    std::cerr << "dry run: " << result.submitted << " cell(s) prepared, nothing run; commands in "
              << (plan.out_dir / "cells" / "<id>" / "command.txt").string() << "\n";
    return 0;
  }
  const Report report = write_report(plan, experiment::read_report_options(plan.out_dir));
  push_report_if_tracked(plan.out_dir);
  std::cout << report.markdown_table << "\n";
  std::cerr << "results: " << (plan.out_dir / "results.csv").string()
            << ", report: " << (plan.out_dir / "report.md").string() << " and "
            << (plan.out_dir / "report.html").string() << "\n";
  if (!report.plot_problem.empty()) std::cerr << "warning: " << report.plot_problem << "\n";
  for (const auto& w : report.warnings) std::cerr << "warning: " << w << "\n";
  std::cerr << "this run: " << result.ok << " ok, " << result.failed << " failed, " << result.timeout << " timeout, "
            << result.interrupted << " interrupted";
  if (result.submitted > 0)
    std::cerr << ", " << result.submitted << " submitted (`gradsweep status " << plan.out_dir.string() << "`)";
  std::cerr << "\n";
  if (g_stop.load() || result.interrupted > 0) {
    std::cerr << "stopped: run the same command again to resume\n";
    return kInterrupted;
  }
  return sweep_exit_code(plan);
}

}  // namespace

void register_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "Run every cell of an experiment (skipping the done ones) and report");
  cmd->add_option("experiment", args->experiment, "Experiment file (YAML); see docs/experiments.md")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out,-o", args->out, "Output directory (default: runs/<experiment name>)");
  cmd->add_option("--launcher", args->launcher,
                  "local (mpirun on this machine; cells with launcher.name: emulated on an emulated cluster) or slurm "
                  "(job arrays)")
      ->check(CLI::IsMember({"local", "slurm"}));
  cmd->add_option("--set", args->overrides, "Override a key of the experiment file: --set train.steps=50 (repeatable)");
  cmd->add_option("--max-cells", args->max_cells, "Refuse a sweep of more cells than this")
      ->capture_default_str()  // kDefaultMaxCells, shown as it is
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--retry-failed", args->retry_failed, "Also rerun cells that failed or timed out");
  cmd->add_flag("--force", args->force, "Rerun every cell from scratch, done or not");
  cmd->add_flag("--fail-fast", args->fail_fast, "Stop at the first failed cell");
  cmd->add_flag("--dry-run", args->dry_run,
                "Write the cells' configurations and commands (slurm: scripts), run nothing");
  cmd->add_flag("--no-wait", args->no_wait,
                "slurm: return once the jobs are submitted (`gradsweep status DIR` follows)");
  cmd->callback([args] {
    const int code = run_sweep(*args);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace gradsweep::cli
