#include "experiment/launch/progress_display.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

namespace gradsweep::experiment {
namespace {

constexpr auto kQuietInterval = std::chrono::seconds(10);

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long s = std::lround(seconds);
  std::ostringstream out;
  if (s >= 3600)
    out << s / 3600 << "h" << s % 3600 / 60 << "m";
  else if (s >= 60)
    out << s / 60 << "m" << s % 60 << "s";
  else
    out << s << "s";
  return out.str();
}

std::optional<LatestStep> read_latest_step(const std::filesystem::path& cell_dir) {
  std::ifstream in(cell_dir / "metrics.jsonl", std::ios::binary);
  if (!in) return std::nullopt;
  // Only the tail matters, and the file grows by a line per step: read its last few KiB.
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff from = std::max<std::streamoff>(0, size - 16384);
  in.seekg(from);
  std::string tail((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The last complete line (the writer may be in the middle of the next one).
  const auto end = tail.rfind('\n');
  if (end == std::string::npos) return std::nullopt;
  const auto begin = tail.rfind('\n', end == 0 ? 0 : end - 1);
  const std::string line =
      tail.substr(begin == std::string::npos ? 0 : begin + 1, end - (begin == std::string::npos ? 0 : begin + 1));
  try {
    const auto j = nlohmann::json::parse(line);
    LatestStep s;
    s.step = j.value("step", std::int64_t{-1});
    s.tokens_per_sec = j.value("tokens_per_sec", 0.0);
    if (j.contains("time_s") && j["time_s"].is_object())
      s.step_time_s = j["time_s"].value("step", 0.0);
    else
      s.step_time_s = j.value("time_s.step", 0.0);
    return s;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

ProgressDisplay::ProgressDisplay(std::ostream& out, int total_cells, int already_done, bool interactive)
    : out_(out), total_(total_cells), done_(already_done), interactive_(interactive) {}

void ProgressDisplay::show(const std::string& line, bool force) {
  const auto now = std::chrono::steady_clock::now();
  if (interactive_) {
    std::string padded = line;
    if (padded.size() < last_width_) padded += std::string(last_width_ - padded.size(), ' ');
    last_width_ = line.size();
    out_ << '\r' << padded << std::flush;
    return;
  }
  if (!force && now - last_print_ < kQuietInterval) return;
  last_print_ = now;
  out_ << line << std::endl;
}

std::string ProgressDisplay::eta(const runs::PlannedCell& cell, const std::optional<LatestStep>& latest) const {
  const int remaining_after = total_ - done_ - failed_ - 1;
  double cell_left = NAN;
  if (latest && latest->step >= 0 && latest->step_time_s > 0 && cell.steps > 0)
    cell_left = static_cast<double>(cell.steps - latest->step - 1) * latest->step_time_s;
  double per_cell = seconds_per_finished_cell_;
  if (per_cell <= 0 && std::isfinite(cell_left)) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - cell_start_).count();
    per_cell = elapsed + cell_left;
  }
  if (!std::isfinite(cell_left)) return "?";
  return format_duration(cell_left + std::max(0, remaining_after) * per_cell);
}

void ProgressDisplay::cell_started(const runs::PlannedCell& cell) {
  cell_start_ = std::chrono::steady_clock::now();
  std::ostringstream line;
  line << "[" << done_ << "/" << total_ << " done" << (failed_ ? ", " + std::to_string(failed_) + " failed" : "")
       << "] cell " << cell.id << " (" << runs::axes_text(cell) << ", " << cell.world_size() << " rank"
       << (cell.world_size() == 1 ? "" : "s") << "): starting";
  show(line.str(), true);
}

void ProgressDisplay::cell_running(const runs::PlannedCell& cell) {
  const auto latest = read_latest_step(cell.dir);
  std::ostringstream line;
  line << "[" << done_ << "/" << total_ << " done" << (failed_ ? ", " + std::to_string(failed_) + " failed" : "")
       << "] cell " << cell.id << " (" << runs::axes_text(cell) << "): ";
  if (latest && latest->step >= 0)
    line << "step " << latest->step + 1 << "/" << cell.steps << ", " << std::lround(latest->tokens_per_sec)
         << " tokens/s, ETA " << eta(cell, latest);
  else
    line << "starting";
  show(line.str(), false);
}

void ProgressDisplay::cell_finished(const runs::PlannedCell& cell, const runs::CellStatus& status) {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - cell_start_).count();
  ++finished_this_run_;
  seconds_per_finished_cell_ += (seconds - seconds_per_finished_cell_) / finished_this_run_;
  if (status.state == runs::CellState::Ok)
    ++done_;
  else
    ++failed_;
  std::ostringstream line;
  line << "[" << done_ << "/" << total_ << " done" << (failed_ ? ", " + std::to_string(failed_) + " failed" : "")
       << "] cell " << cell.id << " (" << runs::axes_text(cell) << "): " << to_string(status.state) << " in "
       << format_duration(seconds) << (status.reason.empty() ? "" : ": " + status.reason);
  show(line.str(), true);
  if (interactive_) {
    out_ << '\n' << std::flush;
    last_width_ = 0;
  }
}

}  // namespace gradsweep::experiment
