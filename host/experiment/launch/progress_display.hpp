#pragma once
// The sweep's progress on stderr, one line:
//   [3/12 done, 1 failed] cell 5f2a9c01d3e4 (strategy=ring nodes=2): step 120/300, 5400 tokens/s, ETA 4m10s
// Step and tokens/s come from the running cell's metrics.jsonl (its last line), so the same display
// serves any launcher. On a terminal the line is redrawn in place; otherwise a line is printed at most
// every 10 seconds, so that logs stay readable.
#include "experiment/launch/launcher.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

namespace gradsweep::experiment {

struct LatestStep {
  std::int64_t step = -1;
  double tokens_per_sec = 0, step_time_s = 0;
};
// The last complete line of DIR/cells/<id>/metrics.jsonl; nullopt while there is none.
std::optional<LatestStep> read_latest_step(const std::filesystem::path& cell_dir);

class ProgressDisplay final : public ProgressSink {
 public:
  ProgressDisplay(std::ostream& out, int total_cells, int already_done, bool interactive);
  void cell_started(const runs::PlannedCell& cell) override;
  void cell_running(const runs::PlannedCell& cell) override;
  void cell_finished(const runs::PlannedCell& cell, const runs::CellStatus& status) override;

 private:
  void show(const std::string& line, bool force);
  std::string eta(const runs::PlannedCell& cell, const std::optional<LatestStep>& latest) const;

  std::ostream& out_;
  int total_, done_, failed_ = 0, finished_this_run_ = 0;
  bool interactive_;
  std::chrono::steady_clock::time_point cell_start_, last_print_;
  double seconds_per_finished_cell_ = 0;  // mean over the cells finished by this run
  std::size_t last_width_ = 0;
};

std::string format_duration(double seconds);

}  // namespace gradsweep::experiment
