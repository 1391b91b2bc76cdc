#include "experiment/launch/launcher_local.hpp"

#include "env/environment.hpp"
#include "experiment/launch/elastic_cell.hpp"
#include "experiment/launch/launcher_emulated.hpp"
#include "runs/machine_load.hpp"
#include "experiment/launch/provenance.hpp"
#include "experiment/launch/run_order.hpp"
#include "util/atomic_file.hpp"

#include <torch/cuda.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace gradsweep::experiment {
namespace {

using Clock = std::chrono::steady_clock;
// How long a stopped job may take to exit after SIGTERM before it gets SIGKILL.
constexpr auto kStopGrace = std::chrono::seconds(10);
// How long mpirun may take to exit after the ranks' collective deadline has judged the job hung: it normally
// follows at once (the ranks abort), so a longer wait means it is stuck on a node it cannot reach.
constexpr auto kVerdictGrace = std::chrono::seconds(10);
constexpr auto kPollInterval = std::chrono::milliseconds(200);
constexpr auto kProgressInterval = std::chrono::seconds(1);

struct JobEnd {
  int exit_code;
  bool interrupted;
};

JobEnd wait_for(pid_t pid, const runs::PlannedCell& cell, const LaunchOptions& options, ProgressSink& progress) {
  auto last_progress = Clock::now();
  std::optional<Clock::time_point> stopping_since, verdict_since, ending_since;
  const std::filesystem::path verdict = cell.dir / "flight-recorder" / "verdict.json";
  // A verdict counts only when this job wrote it: a cell that resumes may hold one from an earlier job.
  const auto started = std::filesystem::file_time_type::clock::now();
  const auto fresh_verdict = [&] {
    std::error_code ec;
    const auto written = std::filesystem::last_write_time(verdict, ec);
    return !ec && written >= started;
  };
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return {code, stopping_since.has_value()};
    }
    const bool stop = options.stop_requested != nullptr && options.stop_requested->load();
    // The ranks have ended the job (the collective deadline wrote its verdict), yet mpirun has not exited: it
    // waits for the daemon of a node it can no longer reach (a link that went down), and would wait for ever.
    if (!verdict_since && fresh_verdict()) verdict_since = Clock::now();
    const bool abandoned = verdict_since && Clock::now() - *verdict_since > kVerdictGrace;
    if (stop && !stopping_since) {
      stopping_since = Clock::now();
      ::kill(-pid, SIGTERM);
    } else if (abandoned && !ending_since && !stopping_since) {
      ending_since = Clock::now();
      std::cerr << "cell " << cell.id << ": the ranks ended the job " << kVerdictGrace.count()
                << " s ago and mpirun is still waiting (a node it cannot reach?): stopping it\n";
      ::kill(-pid, SIGTERM);
    } else if ((stopping_since && Clock::now() - *stopping_since > kStopGrace) ||
               (ending_since && Clock::now() - *ending_since > kStopGrace)) {
      ::kill(-pid, SIGKILL);
    }
    if (Clock::now() - last_progress >= kProgressInterval) {
      last_progress = Clock::now();
      progress.cell_running(cell);
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

bool needs_quotes(const std::string& s) {
  if (s.empty()) return true;
  for (const char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && std::string("-_./=:,+@%").find(c) == std::string::npos)
      return true;
  return false;
}

}  // namespace

pid_t spawn_job(const std::vector<std::string>& argv, const std::filesystem::path& log) {
  const pid_t parent = ::getpid();
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(log.string() + ": cannot open");
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd);
    throw std::runtime_error("fork failed");
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(128 + SIGTERM);  // the launcher died before prctl took effect
    ::setpgid(0, 0);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    const std::string msg = "error: cannot start " + argv[0] + "\n";
    [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, msg.data(), msg.size());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // both sides, so that the group exists before either goes on
  ::close(fd);
  return pid;
}

std::string shell_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& a : argv) {
    if (!line.empty()) line += ' ';
    if (!needs_quotes(a)) {
      line += a;
      continue;
    }
    line += '\'';
    for (const char c : a) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += '\'';
  }
  return line;
}

int local_threads_per_rank(const runs::PlannedCell& cell) {
  if (cell.threads_per_rank > 0) return cell.threads_per_rank;
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  return std::max(1, static_cast<int>(cores) / std::max(1, cell.world_size()));
}

std::vector<std::string> local_command(const runs::PlannedCell& cell, int threads) {
  std::vector<std::string> argv = cell.rank_command;
  // The trainer takes its thread count from the configuration; this makes it explicit and the same for
  // OpenMP regions that LibTorch starts before reading it.
  argv.push_back("--set");
  argv.push_back("runtime.threads=" + std::to_string(threads));
  return mpirun_command(cell.world_size(), threads, argv);
}

std::vector<std::string> mpirun_command(int world, int threads, const std::vector<std::string>& rank_argv,
                                        const std::vector<std::string>& extra_env) {
  if (world == 1) return rank_argv;
  std::vector<std::string> mpirun{
      "mpirun", "--oversubscribe",     "--bind-to", "none",
      "-np",    std::to_string(world), "-x",        "OMP_NUM_THREADS=" + std::to_string(threads)};
  // Variables the ranks need from the driver's environment, when set.
  for (const env::Variable& var : env::registry())
    if (var.forwarded && env::raw(var.name)) mpirun.insert(mpirun.end(), {"-x", var.name});
  for (const auto& assignment : extra_env) mpirun.insert(mpirun.end(), {"-x", assignment});
  mpirun.insert(mpirun.end(), rank_argv.begin(), rank_argv.end());
  return mpirun;
}

void allow_mpirun_as_root() {
  // Open MPI refuses to run as root unless told that it is deliberate (containers, CI machines).
  if (::geteuid() == 0) {
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  }
}

namespace {

// Where an emulated cell's cluster could not be made: the cell fails (or is interrupted, when Ctrl-C
// killed the `ip`/`tc` it was running) and the sweep goes on.
runs::CellStatus cluster_failure(const runs::PlannedCell& cell, const std::string& why, const LaunchOptions& options) {
  runs::CellStatus status;
  const bool stopped = options.stop_requested != nullptr && options.stop_requested->load();
  status.state = stopped ? runs::CellState::Interrupted : runs::CellState::Failed;
  status.config_hash = cell.config_hash;
  status.reason = why;
  return status;
}

// One try of a cell at its current size: its cluster up (emulated), the job, the cluster down.
struct Attempt {
  runs::CellStatus status;
  nlohmann::json cluster;        // the cluster's record (emulated), else null
  std::vector<int> unreachable;  // emulated: the nodes whose link was down when the job ended
};

Attempt run_attempt(const runs::PlannedCell& cell, const LaunchOptions& options, ProgressSink& progress,
                    const std::function<void(const nlohmann::json&)>& record_cluster, bool& interrupted) {
  const std::vector<std::string> local = local_command(cell, local_threads_per_rank(cell));
  std::unique_ptr<CellCluster> cluster;
  std::vector<std::string> argv = local;
  Attempt attempt;
  try {
    if (cell.emulated.enabled) {
      cluster = std::make_unique<CellCluster>(cell);
      argv = cluster->command(local);
      attempt.cluster = cluster->record();
      // Which cluster is the cell's, while it runs (its name finds its namespaces: `ip netns pids gsc-NAME-n0`).
      record_cluster(attempt.cluster);
    }
  } catch (const std::exception& e) {
    attempt.status = cluster_failure(cell, e.what(), options);
    return attempt;
  }
  util::write_file_atomically(cell.dir / "command.txt", shell_line(argv) + "\n");
  const pid_t pid = spawn_job(argv, cell.dir / "launcher.log");
  const JobEnd end = wait_for(pid, cell, options, progress);
  interrupted = end.interrupted;
  attempt.status = runs::status_after_exit(cell.dir, cell.config_hash, end.exit_code, false, end.interrupted);
  if (cluster) {
    if (attempt.status.state == runs::CellState::Failed) attempt.unreachable = cluster->nodes_with_link_down();
    cluster->annotate_summary(cell.dir);
    attempt.cluster = cluster->record();  // now with what the job measured (the compute dilation)
    if (const std::string problem = cluster->tear_down(); !problem.empty()) {
      std::cerr << "warning: cell " << cell.id << ": " << problem << "\n";
      attempt.cluster["teardown_problem"] = problem;
    }
  }
  return attempt;
}

// What an elastic cell's change of size says: the failure, and the links found down.
std::string resize_reason(const Attempt& attempt) {
  std::string why = attempt.status.failure;
  if (!attempt.unreachable.empty()) {
    std::string nodes;
    for (const int n : attempt.unreachable) nodes += (nodes.empty() ? "" : ",") + std::to_string(n);
    why += (why.empty() ? "" : "; ") + std::string("link down on node ") + nodes;
  }
  return why;
}

// The flight recorder's dumps and verdict of a job that lost a node move to flight-recorder.before-resize-N: the
// next job's failure, if any, is then judged by its own (classify_failure reads flight-recorder/verdict.json).
void keep_evidence(const std::filesystem::path& cell_dir, std::size_t resize) {
  std::error_code ec;
  const std::filesystem::path dumps = cell_dir / "flight-recorder";
  if (std::filesystem::exists(dumps, ec))
    std::filesystem::rename(dumps, cell_dir / ("flight-recorder.before-resize-" + std::to_string(resize)), ec);
}

// Runs one cell to its end and records it: status.json, provenance.json and, for an emulated cell, its
// cluster, up before each job and down after it. An elastic cell that lost nodes runs again on those left.
runs::CellStatus run_cell(const runs::PlannedCell& planned, const LaunchOptions& options, ProgressSink& progress,
                          bool& interrupted) {
  progress.cell_started(planned);
  const std::string start = runs::utc_now_iso8601();
  runs::CellStatus running;
  running.state = runs::CellState::Running;
  running.config_hash = planned.config_hash;
  running.launcher = planned.emulated.enabled ? "emulated" : "local";
  running.job = std::to_string(::getpid());
  runs::write_cell_status(planned.dir, running);
  const runs::LoadSample load_before = runs::sample_load();
  const nlohmann::json load_start{{"loadavg_start", load_before.loadavg}};
  write_provenance(planned.dir, start, "", load_start);

  nlohmann::json extra = nlohmann::json::object();
  const auto record = [&](const nlohmann::json& cluster) {
    extra["cluster"] = cluster;
    write_provenance(planned.dir, start, "", load_start, extra);
  };
  runs::PlannedCell cell = planned;
  Attempt attempt;
  for (;;) {
    attempt = run_attempt(cell, options, progress, record, interrupted);
    if (attempt.status.state != runs::CellState::Failed || interrupted) break;
    const std::vector<int> lost =
        lost_nodes(attempt.status.failure, cell.nodes, cell.ranks_per_node, attempt.unreachable);
    const std::optional<runs::PlannedCell> next = shrunk_cell(cell, lost);
    if (!next) break;
    running.resizes.push_back(make_resize(cell, *next, lost, resize_reason(attempt)));
    std::cerr << "cell " << cell.id << ": lost " << lost.size() << " of its " << cell.nodes << " nodes ("
              << running.resizes.back().why << "); going on with " << next->nodes
              << " from its last checkpoint (launcher.elastic.min_nodes " << cell.elastic_min_nodes << ")\n";
    runs::write_cell_status(cell.dir, running);
    keep_evidence(cell.dir, running.resizes.size());
    cell = *next;
  }
  if (!attempt.cluster.is_null()) extra["cluster"] = attempt.cluster;
  if (planned.elastic_min_nodes > 0) {
    extra["elastic"] = elastic_record(planned, cell.nodes, running.resizes, true);
    annotate_elastic_summary(cell.dir, extra["elastic"]);
  }
  runs::CellStatus status = attempt.status;
  interrupted = interrupted || status.state == runs::CellState::Interrupted;
  status.launcher = running.launcher;
  status.job = running.job;
  status.resizes = running.resizes;
  runs::write_cell_status(cell.dir, status);
  write_provenance(cell.dir, start, runs::utc_now_iso8601(), runs::load_record(load_before, runs::sample_load()),
                   extra);
  progress.cell_finished(planned, status);
  return status;
}

// The local launcher runs every cell on this machine: a cell on a CUDA device where there is none would
// fail after the cells before it ran. Refused before any cell starts, naming the cells.
void check_gpu_cells_have_a_gpu(const std::vector<runs::PlannedCell>& cells) {
  std::string wanting;
  int count = 0;
  for (const runs::PlannedCell& cell : cells)
    if (cell.cuda && count++ < 5) wanting += (wanting.empty() ? "" : ", ") + cell.id;
  if (count == 0 || torch::cuda::is_available()) return;
  if (count > 5) wanting += ", ... (" + std::to_string(count) + " in all)";
  throw std::runtime_error(
      "cells " + wanting +
      " set runtime.device: cuda, but this machine has no CUDA device (or this LibTorch no CUDA), and the local "
      "launcher runs every cell here; nothing was started. Run them on GPU nodes (--launcher slurm), or set "
      "runtime.device: cpu");
}

}  // namespace

LaunchResult LocalLauncher::run(const std::vector<runs::PlannedCell>& cells, const LaunchOptions& options,
                                ProgressSink& progress) {
  allow_mpirun_as_root();
  if (!options.dry_run) check_gpu_cells_have_a_gpu(cells);
  LaunchResult result;
  for (const runs::PlannedCell& cell : interleaved_order(cells)) {
    if (options.stop_requested != nullptr && options.stop_requested->load()) {
      result.stopped = true;
      break;
    }
    if (options.dry_run) {
      const std::vector<std::string> argv = local_command(cell, local_threads_per_rank(cell));
      util::write_file_atomically(cell.dir / "command.txt",
                                  cell.emulated.enabled ? emulated_dry_run_line(cell, argv) : shell_line(argv) + "\n");
      ++result.submitted;
      continue;
    }
    bool interrupted = false;
    const runs::CellStatus status = run_cell(cell, options, progress, interrupted);
    switch (status.state) {
      case runs::CellState::Ok: ++result.ok; break;
      case runs::CellState::Timeout: ++result.timeout; break;
      case runs::CellState::Interrupted: ++result.interrupted; break;
      default: ++result.failed; break;
    }
    if (interrupted || (options.fail_fast && status.state == runs::CellState::Failed)) {
      result.stopped = true;
      break;
    }
  }
  return result;
}

}  // namespace gradsweep::experiment
