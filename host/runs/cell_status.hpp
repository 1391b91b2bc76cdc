#pragma once
// DIR/cells/<id>/status.json: how a cell of a sweep ended, written atomically by whoever saw it end
// (the local launcher, or the Slurm job / the driver following it).
//
//   {"state": "ok" | "failed" | "timeout" | "interrupted" | "running",
//    "config_hash": "<16 hex>", "reason": "...", "failure": "hang: rank 2 did not finish allreduce #183",
//    "exit_code": 0, "launcher": "local", "job": "...",
//    "resizes": [{"from_nodes": 4, "to_nodes": 3, "lost_nodes": [3], "why": "killed: rank 3 signal 9",
//                 "at": "2025-01-01T12:00:00Z"}],
//    "updated": "2025-01-01T12:00:00Z"}
//
// A cell is done when state is ok and config_hash is the hash of the configuration planned now (see
// host/experiment/launch/launcher.hpp). "interrupted" (Ctrl-C, scancel, requeue) and "running" are not done: the
// next run resumes the cell from its checkpoint. No status.json = pending.
#include "runs/planned_cell.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gradsweep::runs {

enum class CellState { Pending, Running, Ok, Failed, Timeout, Interrupted };

const char* to_string(CellState state);
std::optional<CellState> parse_cell_state(const std::string& text);

// An elastic cell (launcher.elastic, elastic_cell.hpp) that lost nodes and went on with fewer.
struct CellResize {
  int from_nodes = 0, to_nodes = 0;
  std::vector<int> lost_nodes;  // 0-based node indices of the cell's cluster before the change
  std::string why;              // the failure that lost them ("killed: rank 3 signal 9", "link down")
  std::string at;               // UTC time of the change, ISO 8601
};

struct CellStatus {
  CellState state = CellState::Pending;
  std::string config_hash;
  std::string reason;  // failed / timeout / interrupted: one line saying why
  // failed: the kind of failure and its culprit, short (classify_failure); "" otherwise.
  std::string failure;
  int exit_code = -1;    // of the launcher process (mpirun, srun); -1 = unknown
  std::string launcher;  // "local", "slurm"
  std::string job;       // Slurm job id ("1234_5"), or the local launcher's pid
  std::string updated;   // UTC time of writing, ISO 8601
  // Every change of the cell's node count, oldest first; empty for a cell that ran at its planned size.
  std::vector<CellResize> resizes;
};

// The changes as status.json (and provenance.json's "elastic") lists them.
nlohmann::json resizes_json(const std::vector<CellResize>& resizes);
// The changes read back from such a list (an empty one for anything that is not a list).
std::vector<CellResize> resizes_from_json(const nlohmann::json& list);

// "4->3 nodes": the node counts an elastic cell went through; "" when it never changed size.
std::string resize_history(const std::vector<CellResize>& resizes);

inline constexpr const char* kStatusFile = "status.json";

// Pending when the file is missing; Failed with a reason when it cannot be parsed.
CellStatus read_cell_status(const std::filesystem::path& cell_dir);

// The state a cell is in now: its status.json if it was written for this configuration, else pending.
CellStatus current_status(const PlannedCell& cell);

// How a finished cell changed size, for results.csv's `resized` and the comparison's groups: the launcher's
// resize_history ("4->3 nodes"); else, from its summary.json, a resume at another size ("4->3 ranks": Slurm's
// requeue on fewer nodes, `train --resume` by hand) or a run at another size than `planned` (an elastic Slurm
// task that started on fewer nodes); "" for a cell that ran at its planned size throughout.
std::string resized_text(const PlannedCell& planned, const CellStatus& status, const nlohmann::json& summary);
// Atomic (temp file + rename); fills `updated` with the current time.
void write_cell_status(const std::filesystem::path& cell_dir, CellStatus status);

// ok with the same configuration hash: skip it on resume.
bool is_cell_done(const std::filesystem::path& cell_dir, const std::string& config_hash);

// The status of a cell whose launcher process just ended with `exit_code`. ok needs exit code 0 and a
// summary.json saying ok; otherwise the reason is the last error line of the cell's logs.
CellStatus status_after_exit(const std::filesystem::path& cell_dir, const std::string& config_hash, int exit_code,
                             bool timed_out, bool interrupted);

// What ended a failed cell, for results.csv's `failure` column: "hang: <the flight recorder's verdict>"
// or "mismatch: allreduce #12" (DIR/flight-recorder/verdict.json), "killed: rank 1 signal 9" (the
// launcher's "exited on signal"), "hang" (the watchdog's exit code 3 without dumps), else "error".
std::string classify_failure(const std::filesystem::path& cell_dir, int exit_code);

// The last line that looks like an error ("error", "[E]", "terminate", "Abort", ...) in the cell's
// rank-*.log and launcher.log files, trimmed; "" when none.
std::string last_error_line(const std::filesystem::path& cell_dir);

// "2025-01-01T12:00:00Z"
std::string utc_now_iso8601();

}  // namespace gradsweep::runs
