#pragma once
// How a cell's array task ended, once it has left Slurm's queue. Two witnesses:
//  - the cell's status.json, which the batch script writes when srun returns (ok, or failed with srun's
//    exit code), and
//  - Slurm's own record of the task (sacct, or scontrol without accounting), the only one left when Slurm
//    killed the script itself: scancel, the time limit, a node failure.
// The script's word wins when it is there and belongs to this job, unless Slurm says it cancelled the task
// or ended it at its time limit; otherwise Slurm's state decides.
#include "runs/cell_status.hpp"
#include "experiment/slurm/slurm_commands.hpp"

#include <filesystem>
#include <optional>
#include <string>

namespace gradsweep::experiment::slurm {

// `job` is the task's id ("1234_5"); `written` what status.json says now; `slurm` the accounting record,
// absent when Slurm no longer knows the job. Failed and timeout statuses carry the Slurm state and the last
// error line of the cell's logs in their reason.
runs::CellStatus task_outcome(const std::filesystem::path& cell_dir, const std::string& config_hash,
                              const std::string& job, const runs::CellStatus& written,
                              const std::optional<TaskState>& slurm);

// True for squeue states in which the task will still run (or is running): not an outcome yet.
bool is_active_state(const std::string& state);

}  // namespace gradsweep::experiment::slurm
