#include "experiment/slurm/queue_status.hpp"

#include "experiment/slurm/slurm_commands.hpp"
#include "experiment/slurm/task_outcome.hpp"

#include <algorithm>
#include <optional>
#include <set>

namespace gradsweep::experiment::slurm {

namespace {

struct Waiting {
  const runs::PlannedCell* cell;
  runs::CellStatus written;  // status.json when we looked: pending or running, naming the task
};

bool waits_on_slurm(const runs::PlannedCell& cell, const runs::CellStatus& s) {
  return s.launcher == "slurm" && !s.job.empty() && s.config_hash == cell.config_hash &&
         (s.state == runs::CellState::Pending || s.state == runs::CellState::Running);
}

std::string array_of(const std::string& job) { return job.substr(0, job.find('_')); }

// A task Slurm still holds: pending (also requeued, held, suspended: it does not run now) or running.
runs::CellStatus as_queued(runs::CellStatus shown, const TaskState& t) {
  static const std::set<std::string> kNotRunning = {"PENDING",      "REQUEUED",  "REQUEUE_FED",
                                                    "REQUEUE_HOLD", "SUSPENDED", "STOPPED"};
  shown.state = kNotRunning.count(t.state) > 0 ? runs::CellState::Pending : runs::CellState::Running;
  shown.reason = "Slurm job " + t.job + ": " + t.state + (t.reason.empty() ? "" : " (" + t.reason + ")");
  return shown;
}

}  // namespace

QueueStatus ask_slurm_about(const std::vector<runs::PlannedCell>& cells) {
  QueueStatus result;
  std::vector<Waiting> waiting;
  std::vector<std::string> arrays;
  for (const runs::PlannedCell& c : cells) {
    runs::CellStatus s = runs::read_cell_status(c.dir);
    if (!waits_on_slurm(c, s)) continue;
    if (std::find(arrays.begin(), arrays.end(), array_of(s.job)) == arrays.end()) arrays.push_back(array_of(s.job));
    waiting.push_back({&c, std::move(s)});
  }
  if (waiting.empty()) return result;

  std::map<std::string, TaskState> queued;
  try {
    for (const TaskState& t : squeue_tasks(arrays)) queued[t.job] = t;
  } catch (const SlurmError& e) {
    // Without squeue's answer nothing can be known to have ended: show status.json as it is.
    result.problem = e.what();
    return result;
  }
  std::map<std::string, std::optional<std::vector<TaskState>>> records;  // per array, asked at most once
  for (const Waiting& w : waiting) {
    const std::string& job = w.written.job;
    const auto q = queued.find(job);
    if (q != queued.end() && is_active_state(q->second.state)) {
      result.cells[w.cell->id] = as_queued(w.written, q->second);
      continue;
    }
    // squeue -j also lists tasks that ended moments ago; otherwise Slurm's record of the array decides.
    std::optional<TaskState> record = q != queued.end() ? std::optional<TaskState>(q->second) : std::nullopt;
    auto& array_records = records[array_of(job)];
    if (!array_records) {
      try {
        array_records = ended_tasks(array_of(job));
      } catch (const SlurmError& e) {
        result.problem = e.what();
        array_records = std::vector<TaskState>{};
      }
    }
    for (const TaskState& t : *array_records)
      if (t.job == job) record = t;
    if (record && is_active_state(record->state)) {  // requeued between the two questions
      result.cells[w.cell->id] = as_queued(w.written, *record);
      continue;
    }
    // The task has left the queue. Its script writes its outcome before it exits, so read status.json
    // again: it may have done so since we first looked.
    const runs::CellStatus now = runs::read_cell_status(w.cell->dir);
    if (now.job != job || now.config_hash != w.written.config_hash) continue;  // another run took the cell over
    const bool script_wrote = now.state == runs::CellState::Ok || now.state == runs::CellState::Failed;
    if (!record && !script_wrote) {
      if (!result.problem.empty()) continue;  // Slurm could not be asked: not known to have ended
      runs::CellStatus lost = now;
      lost.state = runs::CellState::Failed;
      lost.reason = "job " + job +
                    " is no longer in Slurm's queue and Slurm has no record of how it ended "
                    "(status.json left as it is; the next `gradsweep run` submits the cell again)";
      result.cells[w.cell->id] = lost;
      continue;
    }
    // Truly over: record it, as the follower would have.
    const runs::CellStatus outcome = task_outcome(w.cell->dir, w.cell->config_hash, job, now, record);
    runs::write_cell_status(w.cell->dir, outcome);
    result.cells[w.cell->id] = outcome;
  }
  return result;
}

}  // namespace gradsweep::experiment::slurm
