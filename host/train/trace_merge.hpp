#pragma once
// Merges the ranks' timelines (DIR/trace/rank-<r>.jsonl, written by train/timeline.hpp) into one trace in
// the Chrome trace event format, DIR/trace.json: one process per rank (pid = rank), the training thread
// (tid 1) and the communicator's worker (tid 2) as its threads, times in microseconds on rank 0's clock.
// It opens in https://ui.perfetto.dev and chrome://tracing. Also reads what each rank's timeline says, for
// `gradsweep trace`.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace gradsweep::train {

struct RankTrace {
  int rank = 0;
  std::int64_t offset_ns = 0, round_trip_ns = 0;  // its clock against rank 0's (train/clock_sync.hpp)
  std::vector<std::int64_t> steps;                // the finished steps it traced
  // "completed", "stopped" (--stop-after), "failed", or "" when the rank wrote no end (it was killed, or runs)
  std::string ended;
  std::int64_t last_step = -1;                // the last step it finished, traced or not
  std::int64_t in_step = -1;                  // the step it was in when it stopped or failed; -1 between steps
  std::string after_phase;                    // the last phase of that step that ended
  std::map<std::string, double> breakdown_s;  // means over its traced steps (summary.json's definitions)
  double calls_per_step = 0, bytes_per_step = 0, main_comm_s = 0, worker_comm_s = 0;  // means over traced steps
  std::int64_t torn_lines = 0;  // lines cut short by a kill, skipped
};

struct MergedTrace {
  std::filesystem::path file;  // DIR/trace.json
  std::uintmax_t bytes = 0;
  std::size_t steps_traced = 0;  // the most any rank traced
  std::vector<RankTrace> ranks;
};

// Throws std::runtime_error when DIR/trace holds no rank's timeline.
MergedTrace merge_trace(const std::filesystem::path& dir);

// Where the trace is and a few lines per rank: its traced steps, how it ended, its step breakdown.
std::string summarize(const MergedTrace& trace);

}  // namespace gradsweep::train
