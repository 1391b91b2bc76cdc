#pragma once
// How a sweep's cells are run: the contract between `gradsweep run` (the driver) and a launcher
// (local: mpirun on this machine, launcher_local.hpp; slurm: job arrays, slurm/slurm_launcher.hpp).
//
// The driver validates the experiment file, expands the matrix, drops the cells that are already done,
// and writes for each remaining cell its directory, resolved configuration and command. A launcher only
// runs what it is given and records how each cell ended; it never reads the experiment file.
//
// Output directory layout (DIR is `--out`, default runs/<experiment name>):
//
//   DIR/.lock                      flock held by the one `gradsweep run` working on DIR (run_lock.hpp)
//   DIR/experiment.yaml            the experiment file as run (with --set overrides applied)
//   DIR/plan.json                  every planned cell: id, hash, axes, resources (what `status` reads)
//   DIR/results.csv                one row per cell: axes, status, every summary.json scalar (atomic)
//   DIR/report.md, DIR/plots/*.png `gradsweep report DIR`
//   DIR/cells/<id>/                one cell; <id> = first 12 hex digits of the cell's config hash
//       cell.yaml                  resolved cell configuration; the ranks run `gradsweep train cell.yaml`
//       command.txt                the exact command line the launcher runs (one line, shell-quoted)
//       status.json                ok | failed (+ reason) | timeout | interrupted | running  (runs/cell_status.hpp)
//       provenance.json            versions, host, CPU/GPU, start and end time (provenance.hpp)
//       launcher.log               stdout/stderr of the launcher process (mpirun, srun)
//       rank-<r>.log               each rank's log        |
//       metrics.jsonl              one line per step       |  written by `gradsweep train --out DIR/cells/<id>`
//       summary.json               present = complete      |  (docs/results.md)
//       checkpoint/rank-<r>/       resume state           |
//
// A cell is done when status.json says ok AND its config_hash equals the planned cell's hash: a cell
// whose configuration changed (a new default, an edited key) is rerun even if its directory says ok.
// A cell stopped part-way (Ctrl-C, scancel, requeue, time limit) resumes from checkpoint/ the next time,
// because `gradsweep train` resumes by default.
#include "runs/cell_status.hpp"
#include "runs/planned_cell.hpp"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace gradsweep::experiment {

// What the launcher reports while it works; the driver's progress display implements it
// (progress_display.hpp). Calls come from the launcher's thread only.
class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  virtual void cell_started(const runs::PlannedCell& cell) = 0;
  // Called every second or so while `cell` runs: the display reads DIR/cells/<id>/metrics.jsonl itself.
  virtual void cell_running(const runs::PlannedCell& cell) = 0;
  // After status.json of the cell has been written.
  virtual void cell_finished(const runs::PlannedCell& cell, const runs::CellStatus& status) = 0;
};

struct LaunchOptions {
  bool fail_fast = false;  // stop after the first failed cell (the others stay pending)
  bool dry_run = false;    // write scripts / commands, run nothing
  bool wait = true;        // false: submit and return (slurm); the local launcher always waits
  // Set by the driver's SIGINT/SIGTERM handler: stop the running cell(s) cleanly, leave resumable state.
  const std::atomic<bool>* stop_requested = nullptr;
};

struct LaunchResult {
  int ok = 0, failed = 0, timeout = 0, interrupted = 0;
  int submitted = 0;     // slurm with --no-wait or --dry-run: cells handed over but not finished
  bool stopped = false;  // stop_requested or fail_fast ended the run early
};

class Launcher {
 public:
  virtual ~Launcher() = default;
  virtual std::string name() const = 0;  // "local", "slurm"
  // Runs `cells` (in order where the launcher runs them one at a time), writing each cell's status.json
  // (and provenance.json) as it ends. Cell directories, cell.yaml and rank_command exist beforehand.
  // Throws only for problems that concern the whole sweep (mpirun or sbatch missing); a failing cell is
  // a status, not an exception.
  virtual LaunchResult run(const std::vector<runs::PlannedCell>& cells, const LaunchOptions& options,
                           ProgressSink& progress) = 0;
};

}  // namespace gradsweep::experiment
