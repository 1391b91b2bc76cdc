#include "conformance/kit_job.hpp"

#include "experiment/launch/launcher_local.hpp"

#include <boost/dll/runtime_symbol_info.hpp>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

namespace gradsweep::conformance {
namespace fs = std::filesystem;
namespace {

constexpr auto kPoll = std::chrono::milliseconds(50);
// mpirun passes SIGTERM on to its ranks; a job still there this long after it gets SIGKILL.
constexpr double kTermGraceSeconds = 5;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string read_file(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The job's status, or nullopt while it runs.
std::optional<int> reap(pid_t pid, bool block) {
  int status = 0;
  if (::waitpid(pid, &status, block ? 0 : WNOHANG) != pid) return std::nullopt;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void read_results(JobRun& run) {
  std::ifstream metrics(run.dir / "metrics.jsonl");
  for (std::string line; std::getline(metrics, line);)
    if (!line.empty()) run.losses.push_back(nlohmann::json::parse(line).at("loss").get<double>());
  const nlohmann::json summary = nlohmann::json::parse(read_file(run.dir / "summary.json"), nullptr, false);
  if (summary.is_object() && summary.contains("val_loss") && summary["val_loss"].is_number())
    run.val_loss = summary["val_loss"].get<double>();
}

}  // namespace

std::string JobRun::failure() const {
  std::string why = timed_out ? "still running after its deadline" : "exit " + std::to_string(exit_code);
  std::istringstream lines(output);
  std::string last;
  for (std::string line; std::getline(lines, line);)
    if (line.find("error") != std::string::npos) last = line;
  return last.empty() ? why : why + ": " + last;
}

Job::Job(const Workspace& ws, JobSpec spec) : spec_(std::move(spec)) {
  dir_ = ws.dir / "jobs" / spec_.label;
  log_ = ws.dir / "jobs" / (spec_.label + (spec_.again ? "-again.log" : ".log"));
  if (!spec_.again) fs::remove_all(dir_);
  fs::remove(log_);
  fs::create_directories(dir_.parent_path());
  if (!spec_.copy_of.empty()) fs::copy(ws.dir / "jobs" / spec_.copy_of, dir_, fs::copy_options::recursive);
  std::vector<std::string> argv{boost::dll::program_location().string(), "train", ws.cell.string(), "--out",
                                dir_.string()};
  for (const auto& o : spec_.overrides) argv.insert(argv.end(), {"--set", o});
  argv.insert(argv.end(), spec_.flags.begin(), spec_.flags.end());
  // One rank runs without mpirun, as the local launcher runs it; its variables come through env(1).
  if (spec_.ranks == 1 && !spec_.env.empty()) {
    std::vector<std::string> with_env{"env"};
    with_env.insert(with_env.end(), spec_.env.begin(), spec_.env.end());
    argv.insert(argv.begin(), with_env.begin(), with_env.end());
  }
  started_ = now_seconds();
  // Tied to this process: a check that is stopped (Ctrl-C, a test's timeout) leaves no job behind.
  pid_ = experiment::spawn_job(experiment::mpirun_command(spec_.ranks, 1, argv, spec_.env), log_);
}

JobRun Job::finish() {
  JobRun run;
  run.label = spec_.label;
  run.ranks = spec_.ranks;
  run.dir = dir_;
  std::optional<int> code;
  double terminated_at = 0;
  while (!(code = reap(pid_, false))) {
    const double now = now_seconds();
    if (!run.timed_out && now - started_ > spec_.deadline_seconds) {
      run.timed_out = true;
      run.seconds = now - started_;
      terminated_at = now;
      ::kill(-pid_, SIGTERM);
    } else if (run.timed_out && now - terminated_at > kTermGraceSeconds) {
      ::kill(-pid_, SIGKILL);
      code = reap(pid_, true);
      break;
    }
    std::this_thread::sleep_for(kPoll);
  }
  if (!run.timed_out) run.seconds = now_seconds() - started_;
  run.exit_code = code.value_or(-1);
  run.output = read_file(log_);
  read_results(run);
  return run;
}

}  // namespace gradsweep::conformance
