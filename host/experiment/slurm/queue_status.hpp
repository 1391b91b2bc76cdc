#pragma once
// What Slurm says now about the cells of a sweep that nobody follows (`gradsweep run --no-wait`, a driver
// stopped with Ctrl-C, a run on another machine), for `gradsweep status DIR`.
//
// A cell's status.json says "pending" or "running" from the moment it is submitted until its batch script
// writes the outcome. When Slurm kills the script first (scancel, the time limit, a node failure) nothing
// writes that outcome, and status.json would say "running" for ever. So for every cell whose status.json
// names a Slurm task of its configuration and is not final, this asks squeue, then Slurm's record
// (slurm_commands.hpp: sacct, or scontrol without accounting):
//  - still queued: the state shown is Slurm's (pending, also after a requeue; running), with Slurm's
//    reason; status.json is not touched;
//  - ended, and Slurm's record (or the script's own last word) says how: the outcome that the follower
//    would write (task_outcome.hpp) is written to status.json, atomically, and shown;
//  - gone with no record at all: shown as failed, not written (the next `gradsweep run` submits it again).
// The follower in slurm_launcher.cpp decides the same way while it runs.
#include "experiment/launch/launcher.hpp"

#include <map>
#include <string>
#include <vector>

namespace gradsweep::experiment::slurm {

struct QueueStatus {
  std::map<std::string, runs::CellStatus> cells;  // cell id -> its state now, for the cells Slurm was asked about
  std::string problem;  // why Slurm could not be asked (not installed, controller down); "" if it answered
};

// Asks nothing (and returns no cells) when no cell waits on Slurm.
QueueStatus ask_slurm_about(const std::vector<runs::PlannedCell>& cells);

}  // namespace gradsweep::experiment::slurm
