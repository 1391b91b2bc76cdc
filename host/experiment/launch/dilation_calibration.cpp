#include "experiment/launch/dilation_calibration.hpp"

#include "experiment/launch/launcher_local.hpp"
#include "device/machine.hpp"
#include "util/atomic_file.hpp"

#include <yaml-cpp/yaml.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace gradsweep::experiment {
namespace fs = std::filesystem;
namespace {

// Enough steps that the best of them is a warmed-up one (the first steps still grow the allocator's
// pools) and that they span a couple of seconds, so that a short slow moment does not cover them all; few
// enough that a large model's calibration does not cost minutes. With a cached reference the steps are
// sized to about kCalibrationSeconds of compute.
constexpr int kMinCalibrationSteps = 6, kMaxCalibrationSteps = 20;
constexpr double kCalibrationSeconds = 2.5;

int calibration_steps(double cached_best_s) {
  if (cached_best_s <= 0) return kMaxCalibrationSteps;
  const double fit = std::ceil(kCalibrationSeconds / cached_best_s) + 1;
  return static_cast<int>(std::clamp(fit, double(kMinCalibrationSteps), double(kMaxCalibrationSteps)));
}

// The cell's `gradsweep train`, as one node's ranks_per_node ranks: the global batch shrinks with the ranks
// so that each rank computes the batch it has in the cell. What the measurement does not need is off:
// checkpoints, the trace, TensorBoard and MLflow (a calibration is no run of its own), and the peak FLOP/s
// measurement (MFU is not read).
std::vector<std::string> calibration_argv(const runs::PlannedCell& cell, int threads, int steps, const fs::path& out) {
  const YAML::Node config = YAML::LoadFile(cell.config_file.string());
  const std::int64_t batch = config["train"]["batch_size"].as<std::int64_t>();
  const std::int64_t node_batch = batch / cell.world_size() * cell.ranks_per_node;
  std::vector<std::string> argv{cell.rank_command.at(0), "train", cell.config_file.string(), "--out", out.string()};
  for (const std::string& set :
       {"runtime.threads=" + std::to_string(threads), "train.batch_size=" + std::to_string(node_batch),
        "train.steps=" + std::to_string(steps), std::string("metrics.log_every=1"), std::string("metrics.trace=off"),
        std::string("metrics.tensorboard=false"), std::string("metrics.kernel_profile=0"),
        std::string("metrics.peak_flops=1e12"), std::string("tracking.mlflow=''"), std::string("checkpoint.every=0")})
    argv.insert(argv.end(), {"--set", set});
  return mpirun_command(cell.ranks_per_node, threads, argv);
}

// In the forked child: the highest nice, so that the calibration takes the cores before other work of normal
// priority. Not real-time scheduling, which would be closer to a node of its own: for its seconds it would starve
// whatever else runs on the machine (another test's timed collective, the user's editor). The reference is the
// best calibration so far, which absorbs the slow ones. Returns what it got.
char raise_priority() { return ::setpriority(PRIO_PROCESS, 0, -20) == 0 ? 'n' : '-'; }

// Starts argv in a process group of its own, stdout and stderr to `log` after its command line, at raised priority;
// `how` gets what raise_priority obtained. Like spawn_job (launcher_local.hpp), the job dies with this process.
pid_t spawn_prioritized(const std::vector<std::string>& argv, const fs::path& log, char& how) {
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int report[2];
  if (fd < 0 || ::pipe2(report, O_CLOEXEC) != 0) throw std::runtime_error(log.string() + ": cannot open");
  const std::string line = shell_line(argv) + "\n";  // the log says what ran
  [[maybe_unused]] const ssize_t written = ::write(fd, line.data(), line.size());
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(128 + SIGKILL);
    ::setpgid(0, 0);
    const char got = raise_priority();
    [[maybe_unused]] const ssize_t w = ::write(report[1], &got, 1);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(fd);
  ::close(report[1]);
  how = '-';
  if (pid > 0) {
    ::setpgid(pid, pid);
    if (::read(report[0], &how, 1) != 1) how = '-';
  }
  ::close(report[0]);
  if (pid < 0) throw std::runtime_error("fork failed");
  return pid;
}

// The job's exit status, or -1 when it ran past the deadline (it is then killed, with all it started).
int wait_until(pid_t pid, double deadline_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_s);
  for (;;) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (std::chrono::steady_clock::now() > end) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// What makes one node's step take the time it takes: the model, the strategy (its precision), what each
// rank computes per step, threads, ranks per node, the device; and the machine. Not the data, the steps or
// the learning rate.
std::string computation_key(const runs::PlannedCell& cell, int threads) {
  const YAML::Node config = YAML::LoadFile(cell.config_file.string());
  YAML::Emitter model, strategy;
  model << config["model"];
  strategy << config["strategy"];
  const YAML::Node train = config["train"];
  const auto text = [](const YAML::Node& n) { return n ? n.as<std::string>() : std::string(); };
  const nlohmann::json what{{"model", model.c_str()},
                            {"strategy", strategy.c_str()},
                            {"rank_batch", train["batch_size"].as<std::int64_t>() / cell.world_size()},
                            {"seq_len", text(train["seq_len"])},
                            {"micro_batch", text(train["micro_batch"])},
                            {"optimizer", text(train["optimizer"])},
                            {"device", config["runtime"] ? text(config["runtime"]["device"]) : ""},
                            {"threads", threads},
                            {"ranks_per_node", cell.ranks_per_node}};
  return device::host_name() + "/" + std::to_string(std::hash<std::string>{}(what.dump()));
}

nlohmann::json read_cache(const fs::path& cache_file) {
  nlohmann::json cache = nlohmann::json::object();
  if (std::ifstream in(cache_file); in) cache = nlohmann::json::parse(in, nullptr, false);
  return cache.is_object() ? cache : nlohmann::json::object();  // a damaged cache starts again
}

// The cache's entry for `key`: {"best_s", "calibrations"}, or an empty object.
nlohmann::json cached_entry(const nlohmann::json& cache, const std::string& key) {
  return cache.contains(key) && cache[key].is_object() ? cache[key] : nlohmann::json::object();
}

// Folds this calibration into the cache's best for `key`; the reference is that best.
void fold_into_cache(ComputeReference& ref, const fs::path& cache_file, const std::string& key) {
  nlohmann::json cache = read_cache(cache_file);
  const nlohmann::json entry = cached_entry(cache, key);
  double best = entry.value("best_s", 0.0);
  int count = entry.value("calibrations", 0);
  if (ref.measured > 0) {
    best = best > 0 ? std::min(best, ref.measured) : ref.measured;
    ++count;
    cache[key] = {{"best_s", best}, {"calibrations", count}};
    try {
      fs::create_directories(cache_file.parent_path());
      util::write_file_atomically(cache_file, cache.dump(2) + "\n");
    } catch (const std::exception&) {
      // an unwritable cache only means that the next cell relies on its own calibration
    }
  }
  ref.seconds = best;
  ref.calibrations = count;
}

// One calibration into `ref` (measured, scheduling, problem) in cell.dir/dilation-calibration.
void measure(ComputeReference& ref, const runs::PlannedCell& cell, int threads, int steps, double deadline_s) {
  const fs::path dir = cell.dir / "dilation-calibration";
  const fs::path log = dir / "calibration.log";
  try {
    std::error_code ec;
    fs::remove_all(dir, ec);  // a previous run's: its checkpoint-free output must not be resumed or read
    fs::create_directories(dir);
    char how = '-';
    const pid_t pid = spawn_prioritized(calibration_argv(cell, threads, steps, dir), log, how);
    ref.scheduling = how == 'n' ? "nice -20" : "normal";
    const int code = wait_until(pid, deadline_s);
    fs::remove_all(dir / "checkpoint", ec);  // the trainer's final one: as large as the model and never read
    if (code != 0) {
      ref.problem = code < 0 ? "the one-node calibration took longer than " + std::to_string(int(deadline_s)) + " s"
                             : "the one-node calibration exited with status " + std::to_string(code);
      ref.problem += " (" + log.string() + ")";
      return;
    }
    ref.measured = best_compute_step(dir / "metrics.jsonl");
    if (ref.measured <= 0) ref.problem = "the one-node calibration recorded no forward/backward time";
  } catch (const std::exception& e) {
    ref.problem = std::string("the one-node calibration could not run: ") + e.what();
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

fs::path default_reference_cache() { return device::default_cache_dir() / "dilation-references.json"; }

ComputeReference calibrate_one_node(const runs::PlannedCell& cell, int threads_per_rank, const fs::path& cache_file,
                                    double deadline_s) {
  ComputeReference ref;
  std::string key;
  try {
    key = computation_key(cell, threads_per_rank);
  } catch (const std::exception&) {
    // the cell's configuration did not read: the calibration below fails on it too and says why
  }
  const double cached = key.empty() ? 0.0 : cached_entry(read_cache(cache_file), key).value("best_s", 0.0);
  measure(ref, cell, threads_per_rank, calibration_steps(cached), deadline_s);
  if (!key.empty()) {
    fold_into_cache(ref, cache_file, key);
  } else {
    ref.seconds = ref.measured;
    ref.calibrations = ref.measured > 0 ? 1 : 0;
  }
  return ref;
}

double best_compute_step(const fs::path& metrics_jsonl) {
  std::ifstream in(metrics_jsonl);
  double best = 0, first = 0;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json m = nlohmann::json::parse(line, nullptr, false);
    if (!m.is_object() || !m.contains("time_s") || !m["time_s"].is_object()) continue;
    const double t = m["time_s"].value("forward", 0.0) + m["time_s"].value("backward", 0.0);
    if (t <= 0) continue;
    if (m.value("step", 0) == 0) {
      first = t;  // warm-up: only when it is all there is
    } else if (best == 0 || t < best) {
      best = t;
    }
  }
  return best > 0 ? best : first;
}

double cell_compute_per_step(const nlohmann::json& summary) {
  const nlohmann::json* by_rank = nullptr;
  if (summary.contains("step_breakdown") && summary["step_breakdown"].contains("by_rank"))
    by_rank = &summary["step_breakdown"]["by_rank"];
  if (by_rank == nullptr || !by_rank->contains("forward_s") || !by_rank->contains("backward_s")) return 0;
  const nlohmann::json& forward = (*by_rank)["forward_s"];
  const nlohmann::json& backward = (*by_rank)["backward_s"];
  std::vector<double> compute;
  for (std::size_t r = 0; r < forward.size() && r < backward.size(); ++r) {
    if (!forward[r].is_number() || !backward[r].is_number()) continue;
    const double t = forward[r].get<double>() + backward[r].get<double>();
    if (t > 0) compute.push_back(t);  // a parameter server that only serves computes nothing
  }
  return compute.empty() ? 0 : median(compute);
}

}  // namespace gradsweep::experiment
