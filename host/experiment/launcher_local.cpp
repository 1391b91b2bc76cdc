#include "experiment/launcher_local.hpp"

#include "config/environment.hpp"
#include "experiment/launcher_emulated.hpp"
#include "experiment/machine_load.hpp"
#include "experiment/provenance.hpp"
#include "experiment/run_order.hpp"
#include "util/atomic_file.hpp"

#include <torch/cuda.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
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
constexpr auto kPollInterval = std::chrono::milliseconds(200);
constexpr auto kProgressInterval = std::chrono::seconds(1);

struct JobEnd {
  int exit_code;
  bool interrupted;
};

JobEnd wait_for(pid_t pid, const PlannedCell& cell, const LaunchOptions& options, ProgressSink& progress) {
  auto last_progress = Clock::now();
  std::optional<Clock::time_point> stopping_since;
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return {code, stopping_since.has_value()};
    }
    const bool stop = options.stop_requested != nullptr && options.stop_requested->load();
    if (stop && !stopping_since) {
      stopping_since = Clock::now();
      ::kill(-pid, SIGTERM);
    } else if (stopping_since && Clock::now() - *stopping_since > kStopGrace) {
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

int local_threads_per_rank(const PlannedCell& cell) {
  if (cell.threads_per_rank > 0) return cell.threads_per_rank;
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  return std::max(1, static_cast<int>(cores) / std::max(1, cell.world_size()));
}

std::vector<std::string> local_command(const PlannedCell& cell, int threads) {
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
  for (const host::env::Variable& var : host::env::registry())
    if (var.forwarded && host::env::raw(var.name)) mpirun.insert(mpirun.end(), {"-x", var.name});
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
CellStatus cluster_failure(const PlannedCell& cell, const std::string& why, const LaunchOptions& options) {
  CellStatus status;
  const bool stopped = options.stop_requested != nullptr && options.stop_requested->load();
  status.state = stopped ? CellState::Interrupted : CellState::Failed;
  status.config_hash = cell.config_hash;
  status.reason = why;
  return status;
}

// Runs one cell to its end and records it: status.json, provenance.json and, for an emulated cell, its
// cluster, up before the job and down after it.
CellStatus run_cell(const PlannedCell& cell, const std::vector<std::string>& local, const LaunchOptions& options,
                    ProgressSink& progress, bool& interrupted) {
  progress.cell_started(cell);
  const std::string start = utc_now_iso8601();
  CellStatus running;
  running.state = CellState::Running;
  running.config_hash = cell.config_hash;
  running.launcher = cell.emulated.enabled ? "emulated" : "local";
  running.job = std::to_string(::getpid());
  write_cell_status(cell.dir, running);
  const LoadSample load_before = sample_load();
  write_provenance(cell.dir, start, "", {{"loadavg_start", load_before.loadavg}});

  std::unique_ptr<CellCluster> cluster;
  std::vector<std::string> argv = local;
  CellStatus status;
  bool ready = true;
  try {
    if (cell.emulated.enabled) {
      cluster = std::make_unique<CellCluster>(cell);
      argv = cluster->command(local);
    }
  } catch (const std::exception& e) {
    status = cluster_failure(cell, e.what(), options);
    ready = false;
  }
  nlohmann::json extra = cluster ? nlohmann::json{{"cluster", cluster->record()}} : nlohmann::json();
  // Which cluster is the cell's, while it runs (its name finds its namespaces: `ip netns pids gsc-NAME-n0`).
  if (cluster) write_provenance(cell.dir, start, "", {{"loadavg_start", load_before.loadavg}}, extra);
  if (ready) {
    util::write_file_atomically(cell.dir / "command.txt", shell_line(argv) + "\n");
    const pid_t pid = spawn_job(argv, cell.dir / "launcher.log");
    const JobEnd end = wait_for(pid, cell, options, progress);
    interrupted = end.interrupted;
    status = status_after_exit(cell.dir, cell.config_hash, end.exit_code, false, end.interrupted);
  }
  if (cluster) {
    cluster->annotate_summary(cell.dir);
    if (const std::string problem = cluster->tear_down(); !problem.empty()) {
      std::cerr << "warning: cell " << cell.id << ": " << problem << "\n";
      extra["cluster"]["teardown_problem"] = problem;
    }
  }
  interrupted = interrupted || status.state == CellState::Interrupted;
  nlohmann::json load = load_record(load_before, sample_load());
  status.launcher = running.launcher;
  status.job = running.job;
  write_cell_status(cell.dir, status);
  write_provenance(cell.dir, start, utc_now_iso8601(), load, extra);
  progress.cell_finished(cell, status);
  return status;
}

// The local launcher runs every cell on this machine: a cell on a CUDA device where there is none would
// fail after the cells before it ran. Refused before any cell starts, naming the cells.
void check_gpu_cells_have_a_gpu(const std::vector<PlannedCell>& cells) {
  std::string wanting;
  int count = 0;
  for (const PlannedCell& cell : cells)
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

LaunchResult LocalLauncher::run(const std::vector<PlannedCell>& cells, const LaunchOptions& options,
                                ProgressSink& progress) {
  allow_mpirun_as_root();
  if (!options.dry_run) check_gpu_cells_have_a_gpu(cells);
  LaunchResult result;
  for (const PlannedCell& cell : interleaved_order(cells)) {
    if (options.stop_requested != nullptr && options.stop_requested->load()) {
      result.stopped = true;
      break;
    }
    const std::vector<std::string> argv = local_command(cell, local_threads_per_rank(cell));
    if (options.dry_run) {
      util::write_file_atomically(cell.dir / "command.txt",
                                  cell.emulated.enabled ? emulated_dry_run_line(cell, argv) : shell_line(argv) + "\n");
      ++result.submitted;
      continue;
    }
    bool interrupted = false;
    const CellStatus status = run_cell(cell, argv, options, progress, interrupted);
    switch (status.state) {
      case CellState::Ok: ++result.ok; break;
      case CellState::Timeout: ++result.timeout; break;
      case CellState::Interrupted: ++result.interrupted; break;
      default: ++result.failed; break;
    }
    if (interrupted || (options.fail_fast && status.state == CellState::Failed)) {
      result.stopped = true;
      break;
    }
  }
  return result;
}

}  // namespace gradsweep::experiment
