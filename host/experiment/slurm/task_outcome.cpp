#include "experiment/slurm/task_outcome.hpp"
#include "util/trim.hpp"

#include <fstream>
#include <set>
#include <vector>

namespace gradsweep::experiment::slurm {

namespace {

std::string describe(const TaskState& t) {
  std::string text = "Slurm state " + t.state;
  if (!t.reason.empty()) text += " (" + t.reason + ")";
  if (!t.exit_code.empty()) text += ", exit code " + t.exit_code;
  return text;
}

bool is_slurm_line(const std::string& line) {
  return line.rfind("srun:", 0) == 0 || line.rfind("slurmstepd", 0) == 0 || line.rfind("===", 0) == 0;
}

// The last error a rank printed into launcher.log (srun's output), skipping srun's and slurmstepd's own lines
// ("srun: error: task 0: Exited with exit code 2" says that, not why). A heading that ends with ':' gets
// its next line: main prints "error: configuration error:" and the problem below it.
std::string last_rank_error_in_launcher_log(const std::filesystem::path& cell_dir) {
  std::ifstream in(cell_dir / "launcher.log");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  for (std::size_t i = lines.size(); i-- > 0;) {
    const std::string& line = lines[i];
    if (is_slurm_line(line)) continue;
    bool error = false;
    for (const char* marker : {"error:", "[error]", "[critical]", "what():", "terminate called"})
      error = error || line.find(marker) != std::string::npos;
    if (!error) continue;
    std::string text = util::trim(line);
    if (!text.empty() && text.back() == ':' && i + 1 < lines.size() && !is_slurm_line(lines[i + 1]))
      text += " " + util::trim(lines[i + 1]);
    return text;
  }
  return "";
}

std::string with_log_error(std::string reason, const std::filesystem::path& cell_dir) {
  std::string line = runs::last_error_line(cell_dir);
  if (line.empty() || is_slurm_line(line))
    if (std::string rank_line = last_rank_error_in_launcher_log(cell_dir); !rank_line.empty()) line = rank_line;
  if (!line.empty()) reason += ": " + line;
  return reason;
}

// "2:0" -> 2; "" or unparsable -> -1.
int exit_code_of(const std::string& slurm_exit) {
  try {
    return slurm_exit.empty() ? -1 : std::stoi(slurm_exit.substr(0, slurm_exit.find(':')));
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

bool is_active_state(const std::string& state) {
  static const std::set<std::string> kActive = {"PENDING",   "RUNNING",     "COMPLETING",   "CONFIGURING",
                                                "REQUEUED",  "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING",
                                                "SUSPENDED", "STAGE_OUT",   "SIGNALING",    "STOPPED"};
  return kActive.count(state) > 0;
}

runs::CellStatus task_outcome(const std::filesystem::path& cell_dir, const std::string& config_hash,
                              const std::string& job, const runs::CellStatus& written,
                              const std::optional<TaskState>& slurm) {
  runs::CellStatus status;
  status.config_hash = config_hash;
  status.launcher = "slurm";
  status.job = job;
  const bool script_finished =
      written.job == job && (written.state == runs::CellState::Ok || written.state == runs::CellState::Failed);
  if (script_finished && written.state == runs::CellState::Ok) {
    status.state = runs::CellState::Ok;
    status.exit_code = 0;
    return status;
  }
  // Slurm's killing a task also ends srun with an error, and the script may still write "failed" before it
  // is killed itself: a cancel or a time limit in Slurm's record outranks the script's word.
  const bool killed_by_slurm = slurm && (slurm->state == "CANCELLED" || slurm->state == "PREEMPTED" ||
                                         slurm->state == "TIMEOUT" || slurm->state == "DEADLINE");
  if (script_finished && !killed_by_slurm) {  // srun returned non-zero: the ranks' logs say why
    status.state = runs::CellState::Failed;
    status.exit_code = written.exit_code;
    status.reason =
        with_log_error("srun exited with code " + std::to_string(written.exit_code) + " in job " + job, cell_dir);
    status.failure = runs::classify_failure(cell_dir, written.exit_code);  // as for local cells: hang, killed, mismatch
    return status;
  }
  if (!slurm) {
    status.state = runs::CellState::Failed;
    status.reason = "job " + job + " left the queue without writing a status, and Slurm no longer knows how it ended";
    return status;
  }
  status.exit_code = exit_code_of(slurm->exit_code);
  const std::string& s = slurm->state;
  if (s == "CANCELLED" || s == "PREEMPTED") {
    status.state = runs::CellState::Interrupted;
    status.reason =
        "job " + job + " was cancelled (" + describe(*slurm) + "); the next run resumes it from its checkpoint";
  } else if (s == "TIMEOUT" || s == "DEADLINE") {
    status.state = runs::CellState::Timeout;
    status.reason = "job " + job + " reached its time limit (" + describe(*slurm) +
                    "); the next run resumes it from its checkpoint";
  } else {
    status.state = runs::CellState::Failed;
    status.reason = with_log_error("job " + job + " ended without a status: " + describe(*slurm), cell_dir);
    status.failure = runs::classify_failure(cell_dir, status.exit_code);
  }
  return status;
}

}  // namespace gradsweep::experiment::slurm
