// `gradsweep run` end to end with the local launcher: real mpirun jobs of 1, 2 and 4 ranks on a tiny
// GPT-2, resume, --retry-failed, --force, the lock, Ctrl-C, status, plan, and the report's CSV and PNGs.
#include "experiment_test_support.hpp"
#include "short_shard.hpp"

#include "device/torch_cuda.hpp"
#include "runs/cell_status.hpp"
#include "experiment/launch/run_lock.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <torch/cuda.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

namespace gradsweep {
namespace {
namespace fs = std::filesystem;
using runs::CellState;

const char* kRootEnv = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ";

// single x1, ring x2, dps x4: the three rank counts in one sweep.
std::string three_cells() {
  return test::tiny_experiment(
      "name: tiny\ncheckpoint: {every: 2}\nlauncher: {threads: 1}\n"
      "include:\n  - {strategy: single, ranks_per_node: 1}\n  - {strategy: ring, ranks_per_node: 2}\n"
      "  - {strategy: dps, ranks_per_node: 4}\n");
}

test::CommandResult run(const fs::path& exp, const fs::path& out, const std::string& flags = "") {
  return test::run_command(std::string(kRootEnv) + "timeout -k 5 240 " +
                           test::gradsweep("run " + exp.string() + " --out " + out.string() + " " + flags));
}

bool png(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  char magic[8] = {};
  in.read(magic, 8);
  return in && std::string(magic, 8) == std::string("\x89PNG\r\n\x1a\n", 8);
}

nlohmann::json read_json(const fs::path& file) {
  std::ifstream in(file);
  return nlohmann::json::parse(in);
}

// `gradsweep run` as a process of its own (the driver), its output to `log`.
pid_t start_driver(const std::string& cmd, const fs::path& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", ("exec env " + cmd + " >" + log.string() + " 2>&1").c_str(), nullptr);
    ::_exit(127);
  }
  return pid;
}

// The processes whose command line names `path` (mpirun and the ranks name their cell's directory).
std::vector<std::string> processes_naming(const fs::path& path) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos || pid == std::to_string(::getpid())) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(path.string()) != std::string::npos) found.push_back(pid + ": " + cmdline);
  }
  return found;
}

class SweepRun : public ::testing::Test {
 protected:
  // The three cells run once for the whole suite (ctest starts one process per test: the first trains,
  // the others find the cells done, which is resume at work); each test then works on its own copy.
  static void SetUpTestSuite() {
    base_ = test::build_dir() / "test-scratch" / "SweepRun.shared";
    fs::create_directories(base_);
    const int lock = ::open((base_.string() + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    ::flock(lock, LOCK_EX);  // ctest -j: one process trains, the others wait for it
    test::write_text(base_ / "tiny.yaml", three_cells());
    const auto start = std::chrono::steady_clock::now();
    first_ = new test::CommandResult(run(base_ / "tiny.yaml", base_ / "out"));
    first_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ::close(lock);
  }
  static void TearDownTestSuite() { delete first_; }

  // A copy of the finished sweep in a fresh directory (the cell ids do not depend on DIR).
  fs::path copy_of_finished() {
    const fs::path dir = test::scratch_dir();
    fs::copy(base_, dir, fs::copy_options::recursive);
    return dir;
  }

  static fs::path base_;
  static test::CommandResult* first_;
  static double first_seconds_;
};
fs::path SweepRun::base_;
test::CommandResult* SweepRun::first_ = nullptr;
double SweepRun::first_seconds_ = 0;

TEST_F(SweepRun, RunsOneTwoAndFourRanksAndWritesResults) {
  ASSERT_EQ(first_->exit_code, 0) << first_->output;
  std::cerr << "three cells in " << first_seconds_ << " s\n";
  const fs::path out = base_ / "out";
  int cells = 0;
  std::set<int> world_sizes;
  for (const auto& entry : fs::directory_iterator(out / "cells")) {
    ++cells;
    const fs::path d = entry.path();
    const auto status = runs::read_cell_status(d);
    EXPECT_EQ(status.state, runs::CellState::Ok) << d << ": " << status.reason;
    for (const char* f :
         {"cell.yaml", "command.txt", "metrics.jsonl", "summary.json", "provenance.json", "launcher.log", "rank-0.log"})
      EXPECT_TRUE(fs::exists(d / f)) << d / f;
    const auto summary = read_json(d / "summary.json");
    world_sizes.insert(summary["world_size"].get<int>());
    const std::string command = test::read_text(d / "command.txt");
    if (summary["world_size"].get<int>() > 1)
      EXPECT_NE(
          command.find("mpirun --oversubscribe --bind-to none -np " + std::to_string(summary["world_size"].get<int>())),
          std::string::npos)
          << command;
    else
      EXPECT_EQ(command.find("mpirun"), std::string::npos) << command;
    const auto prov = read_json(d / "provenance.json");
    for (const char* key : {"gradsweep", "libtorch", "open_mpi", "nccl", "cuda", "host", "cpu", "gpu", "start", "end"})
      EXPECT_TRUE(prov.contains(key)) << key;
    EXPECT_TRUE(prov["gradsweep"].contains("commit"));
    EXPECT_TRUE(prov["gradsweep"].contains("dirty"));
    EXPECT_NE(prov["end"].get<std::string>(), "");
  }
  EXPECT_EQ(cells, 3);
  EXPECT_EQ(world_sizes, (std::set<int>{1, 2, 4}));

  const std::string csv = test::read_text(out / "results.csv");
  const std::string header = csv.substr(0, csv.find('\n'));
  for (const char* column :
       {"id", "strategy", "ranks_per_node", "status", "tokens_per_sec", "val_loss", "comm.busy_s",
        "time_split_s.forward", "peak_rss_mb", "step_breakdown.compute_s", "step_breakdown.exposed_comm_s",
        "step_breakdown.wait_s", "step_breakdown.update_s", "step_breakdown.straggler_index"})
    EXPECT_NE(header.find(column), std::string::npos) << column << " in " << header;
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4) << csv;
  for (const char* plot : {"throughput", "efficiency", "loss_step", "loss_time", "bytes", "memory", "step_breakdown"})
    EXPECT_TRUE(png(out / "plots" / (std::string(plot) + ".png"))) << plot;
  // Axes of quantities whose zero means something start at 0 (a cut axis hid the lowest marker on the frame).
  for (const char* plot : {"throughput", "efficiency", "bytes", "memory"})
    EXPECT_NE(test::read_text(out / "plots" / (std::string(plot) + ".gp")).find("set yrange [0:*]"), std::string::npos)
        << plot;
  // A configuration's one-rank point is its own efficiency baseline: exactly 1.
  std::istringstream efficiency(test::read_text(out / "plots" / "efficiency.dat"));
  int one_rank_points = 0;
  for (std::string line; std::getline(efficiency, line);) {
    double x = 0, y = 0;
    if (std::sscanf(line.c_str(), "%lf %lf", &x, &y) == 2 && x == 1) {
      EXPECT_NEAR(y, 1.0, 1e-9) << line;
      ++one_rank_points;
    }
  }
  EXPECT_GE(one_rank_points, 1);
  const std::string report = test::read_text(out / "report.md");
  EXPECT_NE(report.find("![Training throughput](plots/throughput.png)"), std::string::npos) << report;
  EXPECT_NE(first_->output.find("| strategy |"), std::string::npos) << first_->output;
}

TEST_F(SweepRun, SecondRunSkipsDoneCells) {
  const fs::path dir = copy_of_finished();
  const auto r = run(dir / "tiny.yaml", dir / "out");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("3 cells, 3 done, 0 to run"), std::string::npos) << r.output;
  const auto plan =
      test::run_command(test::gradsweep("plan " + (dir / "tiny.yaml").string() + " --out " + (dir / "out").string()));
  EXPECT_EQ(plan.exit_code, 0) << plan.output;
  EXPECT_NE(plan.output.find("3 cells: 3 done"), std::string::npos) << plan.output;
  EXPECT_NE(plan.output.find("1x4 ranks"), std::string::npos) << plan.output;
}

TEST_F(SweepRun, FailedCellsAreLeftAloneUnlessRetried) {
  const fs::path dir = copy_of_finished();
  // Mark the ring cell failed, as a crash would have left it.
  fs::path ring;
  for (const auto& e : fs::directory_iterator(dir / "out" / "cells"))
    if (test::read_text(e.path() / "cell.yaml").find("name: ring") != std::string::npos) ring = e.path();
  ASSERT_FALSE(ring.empty());
  auto status = runs::read_cell_status(ring);
  status.state = runs::CellState::Failed;
  status.reason = "injected";
  runs::write_cell_status(ring, status);
  fs::remove(ring / "summary.json");

  // The sweep is incomplete while the failed cell is left alone: exit 1 (it was 0), the count last.
  const auto skip = run(dir / "tiny.yaml", dir / "out");
  EXPECT_EQ(skip.exit_code, 1) << skip.output;
  EXPECT_NE(skip.output.find("1 failed left alone (--retry-failed reruns them)"), std::string::npos) << skip.output;
  EXPECT_NE(skip.output.find("sweep incomplete: 1 of 3 cells failed or timed out"), std::string::npos) << skip.output;
  EXPECT_EQ(runs::read_cell_status(ring).state, runs::CellState::Failed);
  const auto status_out = test::run_command(test::gradsweep("status " + (dir / "out").string()));
  EXPECT_EQ(status_out.exit_code, 1) << status_out.output;
  EXPECT_NE(status_out.output.find("failed"), std::string::npos) << status_out.output;
  EXPECT_NE(status_out.output.find("injected"), std::string::npos) << status_out.output;

  const auto retry = run(dir / "tiny.yaml", dir / "out", "--retry-failed");
  EXPECT_EQ(retry.exit_code, 0) << retry.output;
  EXPECT_NE(retry.output.find("2 done, 1 to run"), std::string::npos) << retry.output;
  EXPECT_NE(retry.output.find("sweep complete: all 3 cells done"), std::string::npos) << retry.output;
  EXPECT_EQ(test::run_command(test::gradsweep("status " + (dir / "out").string())).exit_code, 0);
  EXPECT_EQ(runs::read_cell_status(ring).state, runs::CellState::Ok);
  EXPECT_TRUE(fs::exists(ring / "summary.json"));
}

TEST(SweepExitCodes, NonZeroWhileACellIsFailedAlsoWhenLeftAlone) {
  const fs::path dir = test::scratch_dir();
  test::write_short_shard(dir / "short.bin", 10);
  test::write_text(dir / "exp.yaml", test::tiny_experiment("launcher: {threads: 1}\ninclude:\n  - {train.lr: 1e-3}\n"
                                                           "  - {data.val: short.bin}\n",
                                                           2));
  const auto first = run(dir / "exp.yaml", dir / "out");
  EXPECT_EQ(first.exit_code, 1) << first.output;
  EXPECT_NE(first.output.find("this run: 1 ok, 1 failed"), std::string::npos) << first.output;
  EXPECT_NE(first.output.find("sweep incomplete: 1 of 2 cells failed or timed out"), std::string::npos) << first.output;
  // The rerun leaves the failed cell alone and runs nothing: still incomplete, still 1 (it was 0).
  const auto again = run(dir / "exp.yaml", dir / "out");
  EXPECT_EQ(again.exit_code, 1) << again.output;
  EXPECT_NE(again.output.find("1 done, 0 to run, 1 failed left alone"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("sweep incomplete: 1 of 2 cells failed or timed out"), std::string::npos) << again.output;
  const auto status = test::run_command(test::gradsweep("status " + (dir / "out").string()));
  EXPECT_EQ(status.exit_code, 1) << status.output;
  EXPECT_NE(status.output.find("2 cells: 1 failed 1 ok"), std::string::npos) << status.output;
}

// The local launcher runs every cell here: a GPU cell on a machine without one is refused before the CPU
// cells before it have run.
TEST(SweepGpuCells, AreRefusedBeforeAnyCellStartsOnAMachineWithoutAGpu) {
  device::load_torch_cuda();  // as gradsweep does, before asking LibTorch
  if (torch::cuda::is_available()) GTEST_SKIP() << "this machine has a CUDA device";
  const fs::path dir = test::scratch_dir();
  test::write_text(dir / "exp.yaml", test::tiny_experiment("launcher: {threads: 1}\ninclude:\n  - {train.lr: 1e-3}\n"
                                                           "  - {train.lr: 2e-3, runtime.device: cuda}\n",
                                                           2));
  const auto r = run(dir / "exp.yaml", dir / "out");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("set runtime.device: cuda, but this machine has no CUDA device"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("nothing was started"), std::string::npos) << r.output;
  for (const auto& cell : fs::directory_iterator(dir / "out" / "cells"))
    EXPECT_FALSE(fs::exists(cell.path() / "rank-0.log")) << cell.path();
}

TEST_F(SweepRun, ForceRerunsEveryCellFromScratch) {
  const fs::path dir = copy_of_finished();
  const auto r = run(dir / "tiny.yaml", dir / "out", "--force --dry-run");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("3 to run"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("dry run: 3 cell(s) prepared"), std::string::npos) << r.output;
  for (const auto& e : fs::directory_iterator(dir / "out" / "cells"))
    EXPECT_NE(test::read_text(e.path() / "command.txt").find("--fresh"), std::string::npos);
}

TEST_F(SweepRun, ASecondDriverOnTheSameDirectoryRefuses) {
  const fs::path dir = copy_of_finished();
  const experiment::RunLock held(dir / "out");
  EXPECT_THROW(experiment::RunLock again(dir / "out"), std::runtime_error);
  const std::string before = test::read_text(dir / "out" / "results.csv");
  const auto r = run(dir / "tiny.yaml", dir / "out");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("is in use by another `gradsweep run` (pid " + std::to_string(::getpid()) + ")"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(test::read_text(dir / "out" / "results.csv"), before) << "the refused run changed nothing";
}

TEST_F(SweepRun, InterruptedCellResumesFromItsCheckpoint) {
  const fs::path dir = test::scratch_dir();
  test::write_text(dir / "long.yaml", test::tiny_experiment("checkpoint: {every: 5}\nlauncher: {threads: 1}\n", 400));
  const std::string cmd = std::string(kRootEnv) +
                          test::gradsweep("run " + (dir / "long.yaml").string() + " --out " + (dir / "out").string());
  const pid_t pid = start_driver(cmd, dir / "driver.log");
  ASSERT_GE(pid, 0);
  // Wait for a checkpoint beyond step 0, then Ctrl-C the driver.
  fs::path cell;
  for (int i = 0; i < 600 && cell.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (fs::exists(dir / "out" / "cells"))
      for (const auto& e : fs::directory_iterator(dir / "out" / "cells"))
        if (fs::exists(e.path() / "checkpoint")) cell = e.path();
  }
  ASSERT_FALSE(cell.empty()) << test::read_text(dir / "driver.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(pid, SIGINT);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const std::string log = test::read_text(dir / "driver.log");
  EXPECT_EQ(WEXITSTATUS(status), 130) << log;
  EXPECT_NE(log.find("stopped: run the same command again to resume"), std::string::npos) << log;
  EXPECT_EQ(runs::read_cell_status(cell).state, runs::CellState::Interrupted);

  const auto again = test::run_command(cmd + " --set train.steps=400");
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(runs::read_cell_status(cell).state, runs::CellState::Ok);
  EXPECT_NE(test::read_text(cell / "rank-0.log").find("resumed from"), std::string::npos);
}

// issue 27: a driver killed with SIGKILL can clean nothing up itself, so what it started must end with it:
// mpirun and both ranks of the running cell are gone within seconds.
TEST_F(SweepRun, NothingOutlivesADriverKilledWithSigkill) {
  const fs::path dir = test::scratch_dir();
  test::write_text(
      dir / "long.yaml",
      test::tiny_experiment("launcher: {threads: 1}\ninclude:\n  - {strategy: ring, ranks_per_node: 2}\n", 2000));
  const std::string cmd = std::string(kRootEnv) +
                          test::gradsweep("run " + (dir / "long.yaml").string() + " --out " + (dir / "out").string());
  const pid_t pid = start_driver(cmd, dir / "driver.log");
  ASSERT_GE(pid, 0);
  // The ranks are training once the cell's metrics.jsonl has a step.
  bool training = false;
  for (int i = 0; i < 600 && !training; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (fs::exists(dir / "out" / "cells"))
      for (const auto& e : fs::directory_iterator(dir / "out" / "cells"))
        training = training || !test::read_text(e.path() / "metrics.jsonl").empty();
  }
  ASSERT_TRUE(training) << test::read_text(dir / "driver.log");
  ASSERT_GE(processes_naming(dir / "out").size(), 3u) << "mpirun and two ranks";
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  std::vector<std::string> left = processes_naming(dir / "out");
  for (int i = 0; i < 300 && !left.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    left = processes_naming(dir / "out");
  }
  std::string names;
  for (const auto& p : left) names += p + "\n";
  EXPECT_TRUE(left.empty()) << "still running 30 s after the driver was killed:\n" << names;
}

TEST_F(SweepRun, FailingCellDoesNotStopTheSweepUnlessFailFast) {
  const fs::path dir = test::scratch_dir();
  // A 10-token validation shard is a valid shard, so it plans, but the trainer refuses it: too small for one
  // (4, 16) batch. (A vocab_size too small for the data no longer gets this far: planning refuses it.)
  test::write_short_shard(dir / "short.bin", 10);
  const std::string val = (test::byte_corpus() / "val.bin").string();
  test::write_text(dir / "f.yaml",
                   test::tiny_experiment("matrix: {data.val: [short.bin, " + val + "]}\nlauncher: {threads: 1}\n", 2));
  const auto r = run(dir / "f.yaml", dir / "out");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("1 ok, 1 failed"), std::string::npos) << r.output;
  const auto csv = test::read_text(dir / "out" / "results.csv");
  EXPECT_NE(csv.find("too small for one batch"), std::string::npos) << csv;

  const auto ff = run(dir / "f.yaml", dir / "out2", "--fail-fast");
  EXPECT_EQ(ff.exit_code, 1) << ff.output;
  EXPECT_NE(ff.output.find("0 ok, 1 failed"), std::string::npos) << ff.output;
}

}  // namespace
}  // namespace gradsweep
