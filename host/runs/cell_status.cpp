#include "runs/cell_status.hpp"
#include "util/trim.hpp"

#include "util/atomic_file.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <ctime>
#include <regex>
#include <fstream>
#include <sstream>
#include <vector>

namespace gradsweep::runs {
namespace fs = std::filesystem;

namespace {

constexpr std::pair<CellState, const char*> kNames[] = {
    {CellState::Pending, "pending"}, {CellState::Running, "running"}, {CellState::Ok, "ok"},
    {CellState::Failed, "failed"},   {CellState::Timeout, "timeout"}, {CellState::Interrupted, "interrupted"}};

bool looks_like_error(const std::string& line) {
  // spdlog's "[error]" / "[critical]" from the ranks, main's "error: ...", and what mpirun or the C++
  // runtime print when a process dies.
  for (const char* marker : {"[error]", "[critical]", "error:", "terminate called", "what():", "Segmentation fault",
                             "Killed", "exited on signal", "MPI_ABORT"})
    if (line.find(marker) != std::string::npos) return true;
  return false;
}

// The last error line of one file, "" when none.
std::string last_error_in(const fs::path& file) {
  std::ifstream in(file);
  std::string line, last;
  bool continues = false;  // "error: configuration error:" says what on the next line
  while (std::getline(in, line)) {
    if (continues && !util::trim(line).empty()) {
      last += " " + util::trim(line);
      continues = false;
    } else if (looks_like_error(line)) {
      last = util::trim(line);
      continues = !last.empty() && last.back() == ':';
    }
  }
  return last;
}

}  // namespace

const char* to_string(CellState state) {
  for (const auto& [s, name] : kNames)
    if (s == state) return name;
  return "?";
}

std::optional<CellState> parse_cell_state(const std::string& text) {
  for (const auto& [s, name] : kNames)
    if (text == name) return s;
  return std::nullopt;
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

CellStatus read_cell_status(const fs::path& cell_dir) {
  CellStatus status;
  std::ifstream in(cell_dir / kStatusFile);
  if (!in) return status;
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    const auto state = parse_cell_state(j.value("state", ""));
    if (!state) throw std::runtime_error("unknown state '" + j.value("state", "") + "'");
    status.state = *state;
    status.config_hash = j.value("config_hash", "");
    status.reason = j.value("reason", "");
    status.failure = j.value("failure", "");
    status.exit_code = j.value("exit_code", -1);
    status.launcher = j.value("launcher", "");
    status.job = j.value("job", "");
    status.updated = j.value("updated", "");
    status.resizes = resizes_from_json(j.value("resizes", nlohmann::json::array()));
  } catch (const std::exception& e) {
    status = CellStatus{};
    status.state = CellState::Failed;
    status.reason = (cell_dir / kStatusFile).string() + " is unreadable: " + e.what();
  }
  return status;
}

CellStatus current_status(const PlannedCell& cell) {
  CellStatus status = read_cell_status(cell.dir);
  if (!status.config_hash.empty() && status.config_hash != cell.config_hash) return CellStatus{};
  return status;
}

std::string resized_text(const PlannedCell& planned, const CellStatus& status, const nlohmann::json& summary) {
  if (!status.resizes.empty()) return resize_history(status.resizes);
  if (!summary.is_object()) return "";
  const int world = summary.value("world_size", planned.world_size());
  const nlohmann::json resharded = summary.value("resharded", nlohmann::json());
  const int from = resharded.is_object() ? resharded.value("from_world_size", world) : planned.world_size();
  if (from == world && world == planned.world_size()) return "";
  std::string text = std::to_string(planned.world_size());
  if (from != planned.world_size()) text += "->" + std::to_string(from);
  return text + "->" + std::to_string(world) + " ranks";
}

void write_cell_status(const fs::path& cell_dir, CellStatus status) {
  status.updated = utc_now_iso8601();
  nlohmann::json j{{"state", to_string(status.state)},
                   {"config_hash", status.config_hash},
                   {"reason", status.reason},
                   {"failure", status.failure},
                   {"exit_code", status.exit_code},
                   {"launcher", status.launcher},
                   {"job", status.job},
                   {"updated", status.updated}};
  if (!status.resizes.empty()) j["resizes"] = resizes_json(status.resizes);
  util::write_file_atomically(cell_dir / kStatusFile, j.dump(2) + "\n");
}

std::vector<CellResize> resizes_from_json(const nlohmann::json& list) {
  std::vector<CellResize> resizes;
  if (!list.is_array()) return resizes;
  for (const nlohmann::json& r : list)
    resizes.push_back({r.value("from_nodes", 0), r.value("to_nodes", 0), r.value("lost_nodes", std::vector<int>{}),
                       r.value("why", ""), r.value("at", "")});
  return resizes;
}

nlohmann::json resizes_json(const std::vector<CellResize>& resizes) {
  nlohmann::json list = nlohmann::json::array();
  for (const CellResize& r : resizes)
    list.push_back({{"from_nodes", r.from_nodes},
                    {"to_nodes", r.to_nodes},
                    {"lost_nodes", r.lost_nodes},
                    {"why", r.why},
                    {"at", r.at}});
  return list;
}

std::string resize_history(const std::vector<CellResize>& resizes) {
  if (resizes.empty()) return "";
  std::string text = std::to_string(resizes.front().from_nodes);
  for (const CellResize& r : resizes) text += "->" + std::to_string(r.to_nodes);
  return text + " nodes";
}

bool is_cell_done(const fs::path& cell_dir, const std::string& config_hash) {
  const CellStatus status = read_cell_status(cell_dir);
  return status.state == CellState::Ok && status.config_hash == config_hash;
}

std::string last_error_line(const fs::path& cell_dir) {
  // Rank logs first: they say why; the launcher's log mostly says that a rank died.
  std::vector<fs::path> ranks;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(cell_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("rank-", 0) == 0 && entry.path().extension() == ".log") ranks.push_back(entry.path());
  }
  std::sort(ranks.begin(), ranks.end());
  for (const auto& file : ranks)
    if (std::string line = last_error_in(file); !line.empty()) return line;
  return last_error_in(cell_dir / "launcher.log");
}

std::string classify_failure(const fs::path& cell_dir, int exit_code) {
  // The flight recorder's verdict says the most: which rank, which collective.
  if (std::ifstream in(cell_dir / "flight-recorder" / "verdict.json"); in) {
    try {
      const nlohmann::json j = nlohmann::json::parse(in);
      const std::string kind = j.value("kind", "");
      if (!kind.empty()) return kind + ": " + j.value("summary", "");
    } catch (const std::exception&) {
    }
  }
  // mpirun: "mpirun noticed that process rank 1 with PID 123 on node n exited on signal 9 (Killed)."
  static const std::regex signalled("rank ([0-9]+) with PID [0-9]+ on node .* exited on signal ([0-9]+)");
  for (const char* name : {"launcher.log", "rank-0.log"}) {
    std::ifstream in(cell_dir / name);
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (std::regex_search(line, m, signalled)) return "killed: rank " + m[1].str() + " signal " + m[2].str();
    }
  }
  if (exit_code == 3) return "hang";  // the watchdog's exit code (docs/communicators.md), without dumps
  return "error";
}

CellStatus status_after_exit(const fs::path& cell_dir, const std::string& config_hash, int exit_code, bool timed_out,
                             bool interrupted) {
  CellStatus status;
  status.config_hash = config_hash;
  status.exit_code = exit_code;
  bool summary_ok = false;
  if (std::ifstream in(cell_dir / "summary.json"); in) {
    try {
      summary_ok = nlohmann::json::parse(in).value("status", "") == "ok";
    } catch (const std::exception&) {
    }
  }
  if (exit_code == 0 && summary_ok && !interrupted) {
    status.state = CellState::Ok;
    return status;
  }
  if (interrupted) {
    status.state = CellState::Interrupted;
    status.reason = "stopped by the user; the next run resumes it from its checkpoint";
  } else if (timed_out) {
    status.state = CellState::Timeout;
    status.reason = "time limit reached; the next run resumes it from its checkpoint";
  } else {
    status.state = CellState::Failed;
    status.reason = last_error_line(cell_dir);
    status.failure = classify_failure(cell_dir, exit_code);
    if (status.reason.empty())
      status.reason = exit_code == 0 ? "exited 0 without a summary.json" : "exit code " + std::to_string(exit_code);
  }
  return status;
}

}  // namespace gradsweep::runs
