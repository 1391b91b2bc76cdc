#pragma once
// `gradsweep run --launcher slurm`: the sweep's cells as Slurm job arrays, one array per resource shape
// (resource_shape.hpp), each task one cell (batch_script.hpp). After submitting, the launcher follows the
// arrays with squeue, reports progress through the ProgressSink as the local launcher does, and writes the
// status of every cell whose task Slurm ended without the script's own word (scancel, time limit).
//
//   DIR/slurm/<stamp>-<shape>.sbatch   the script sbatch received (kept: resubmit it by hand if needed)
//   DIR/slurm/<stamp>-<shape>.cells    task index -> cell
//   DIR/slurm/<stamp>-<shape>-<job>_<task>.out   Slurm's own log of each task (the cell's launcher.log
//                                      has srun's and the ranks' output)
//   DIR/slurm/jobs.jsonl               one line per submitted array: job id, script, cell ids in task order
//
// The <stamp> keeps scripts of different runs apart: a task reads its cells file when it starts, possibly
// long after `gradsweep run --no-wait` returned and another run was planned.
#include "experiment/launch/launcher.hpp"

#include <chrono>
#include <filesystem>
#include <iosfwd>
#include <memory>

namespace gradsweep::experiment {

struct SlurmLauncherOptions {
  std::filesystem::path out_dir;                  // DIR: scripts and Slurm's logs go to DIR/slurm
  std::chrono::milliseconds poll_interval{2000};  // between two squeue calls while following
  std::ostream* messages = nullptr;               // "submitted job array ..." lines; nullptr = std::cout
};

// Options: dry_run writes the scripts and cells files and submits nothing; wait = false submits and
// returns (LaunchResult::submitted counts the cells handed over); fail_fast cancels the arrays after the
// first failed cell; stop_requested (Ctrl-C) stops following and leaves the jobs running. Cells already
// done (status ok with the same config hash) are not submitted. Throws slurm::SlurmError when sbatch or
// squeue is missing or refuses, std::invalid_argument for a value that cannot go into a batch script.
std::unique_ptr<Launcher> make_slurm_launcher(SlurmLauncherOptions options);

}  // namespace gradsweep::experiment
