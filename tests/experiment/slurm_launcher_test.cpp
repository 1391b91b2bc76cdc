// The Slurm launcher on a real Slurm (slurm_cluster.hpp): job arrays per resource shape with ranks started by
// srun --mpi=pmix, following them to the end, a requeued task and a cancelled one resuming from the cell's
// checkpoint. The cells are GPT-2 tiny on the byte-level fortunes corpus: seconds each.
#include "experiment/slurm/shell_quote.hpp"
#include "experiment/slurm/slurm_launcher.hpp"
#include "experiment/slurm_cluster.hpp"
#include "experiment/slurm_daemons.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include <atomic>
#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

namespace gradsweep::experiment {
namespace {
namespace fs = std::filesystem;
using test::read_text;
using test::run_command;

// What the launcher reported, in order ("started <id>", "finished <id> <state>").
struct RecordingSink : ProgressSink {
  std::vector<std::string> events;
  void cell_started(const runs::PlannedCell& c) override { events.push_back("started " + c.id); }
  void cell_running(const runs::PlannedCell&) override {}
  void cell_finished(const runs::PlannedCell& c, const runs::CellStatus& s) override {
    events.push_back(std::string("finished ") + c.id + " " + to_string(s.state));
  }
};

// A planned cell as the driver would hand it over: its directory, cell.yaml and rank command.
runs::PlannedCell make_cell(const fs::path& out, const std::string& id, const std::string& strategy, int ranks,
                            int steps, double lr = 1e-3) {
  const fs::path corpus = test::byte_corpus();
  runs::PlannedCell c;
  c.id = id;
  c.config_hash = id + "0000";
  c.dir = out / "cells" / id;
  c.config_file = c.dir / "cell.yaml";
  std::ostringstream yaml;
  yaml << "model: {name: gpt2, preset: gpt2-tiny, vocab_size: 257, block_size: 32}\n"
       << "strategy: {name: " << strategy << "}\n"
       << "data: {train: " << (corpus / "train.bin").string() << ", val: " << (corpus / "val.bin").string() << "}\n"
       << "train: {steps: " << steps << ", batch_size: 8, seq_len: 32, lr: " << lr << "}\n"
       << "eval: {batches: 2}\n"
       << "checkpoint: {every: 2}\n"
       << "metrics: {log_every: 5, peak_flops: 1e10}\n"
       << "runtime: {threads: 1}\n";
  test::write_text(c.config_file, yaml.str());
  c.rank_command = {test::gradsweep_binary().string(), "train", c.config_file.string(), "--out", c.dir.string()};
  c.ranks_per_node = ranks;
  c.threads_per_rank = 1;  // reaches the ranks as --set runtime.threads=1
  c.steps = steps;
  c.axes = {{"strategy", strategy}};
  return c;
}

SlurmLauncherOptions launcher_options(const fs::path& out, std::ostream& messages) {
  SlurmLauncherOptions o;
  o.out_dir = out;
  o.poll_interval = std::chrono::milliseconds(500);
  o.messages = &messages;
  return o;
}

std::size_t lines_in(const fs::path& file) {
  std::ifstream in(file);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// The step the cell's ranks resumed from ("resumed from .../checkpoint at step K" in rank-0.log), or -1.
int resumed_step(const fs::path& cell_dir) {
  const std::string log = read_text(cell_dir / "rank-0.log");
  std::smatch m;
  if (!std::regex_search(log, m, std::regex("resumed from .* at step ([0-9]+)"))) return -1;
  return std::stoi(m[1]);
}

// Runs the launcher on a thread so that the test can act on the jobs while it follows them; stops it
// (without cancelling the jobs) if the test ends early.
class LauncherThread {
 public:
  LauncherThread(Launcher& launcher, std::vector<runs::PlannedCell> cells, LaunchOptions options)
      : cells_(std::move(cells)), options_(options) {
    options_.stop_requested = &stop_;
    thread_ = std::thread([this, &launcher] {
      try {
        result_ = launcher.run(cells_, options_, sink_);
      } catch (const std::exception& e) {
        error_ = e.what();
      }
    });
  }
  ~LauncherThread() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  const LaunchResult& join() {
    thread_.join();
    return result_;
  }
  const std::string& error() const { return error_; }
  const RecordingSink& sink() const { return sink_; }

 private:
  std::vector<runs::PlannedCell> cells_;
  LaunchOptions options_;
  std::atomic<bool> stop_{false};
  RecordingSink sink_;
  LaunchResult result_;
  std::string error_;
  std::thread thread_;
};

// Waits until the cell has written at least `steps` metrics lines and status.json names its job.
std::string wait_for_progress(const runs::PlannedCell& cell, std::size_t steps, int timeout_s = 90) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < until) {
    const runs::CellStatus status = runs::read_cell_status(cell.dir);
    if (status.state == runs::CellState::Running && lines_in(cell.dir / "metrics.jsonl") >= steps) return status.job;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return "";
}

TEST(SlurmLauncher, ArraysPerShapeRunEveryCellToOk) {
  GRADSWEEP_REQUIRE_SLURM();
  const fs::path out = test::scratch_dir();
  const std::vector<runs::PlannedCell> cells = {make_cell(out, "single-a", "single", 1, 6, 1e-3),
                                                make_cell(out, "ring-x2", "ring", 2, 6),
                                                make_cell(out, "single-b", "single", 1, 6, 2e-3)};
  std::ostringstream messages;
  auto launcher = make_slurm_launcher(launcher_options(out, messages));
  EXPECT_EQ(launcher->name(), "slurm");
  RecordingSink sink;
  const LaunchResult r = launcher->run(cells, {}, sink);
  EXPECT_EQ(r.ok, 3) << messages.str() << test::slurm_cluster()->logs();
  EXPECT_EQ(r.failed + r.timeout + r.interrupted + r.submitted, 0);
  // Two shapes (1 and 2 ranks per node): two arrays.
  EXPECT_EQ(lines_in(out / "slurm" / "jobs.jsonl"), 2u) << messages.str();
  const std::string said = messages.str();
  EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 2) << said;
  for (const runs::PlannedCell& c : cells) {
    const runs::CellStatus s = runs::read_cell_status(c.dir);
    EXPECT_EQ(s.state, runs::CellState::Ok) << c.id << ": " << s.reason << "\n" << read_text(c.dir / "launcher.log");
    EXPECT_EQ(s.launcher, "slurm");
    EXPECT_EQ(s.config_hash, c.config_hash);
    EXPECT_TRUE(fs::exists(c.dir / "summary.json")) << c.id;
    EXPECT_EQ(lines_in(c.dir / "metrics.jsonl"), 6u) << c.id;
    EXPECT_NE(read_text(c.dir / "command.txt").find("srun --mpi=pmix"), std::string::npos);
    EXPECT_NE(read_text(c.dir / "command.txt").find("'runtime.threads=1'"), std::string::npos);
    EXPECT_NE(std::find(sink.events.begin(), sink.events.end(), "finished " + c.id + " ok"), sink.events.end());
  }
  // The ring cell really ran as two MPI ranks under srun.
  EXPECT_NE(read_text(cells[1].dir / "summary.json").find("\"world_size\": 2"), std::string::npos);
  EXPECT_TRUE(fs::exists(cells[1].dir / "rank-1.log"));

  // Done cells are not submitted again.
  std::ostringstream again;
  RecordingSink sink2;
  const LaunchResult r2 = make_slurm_launcher(launcher_options(out, again))->run(cells, {}, sink2);
  EXPECT_EQ(r2.ok + r2.submitted, 0);
  EXPECT_TRUE(again.str().empty()) << again.str();
}

TEST(SlurmLauncher, DryRunWritesScriptsNoWaitReturnsAtOnceAndTheNextRunFollows) {
  GRADSWEEP_REQUIRE_SLURM();
  const fs::path out = test::scratch_dir();
  const std::vector<runs::PlannedCell> cells = {make_cell(out, "a", "single", 1, 4),
                                                make_cell(out, "b", "single", 1, 4)};
  std::ostringstream messages;
  RecordingSink sink;
  LaunchOptions dry;
  dry.dry_run = true;
  const LaunchResult r = make_slurm_launcher(launcher_options(out, messages))->run(cells, dry, sink);
  EXPECT_EQ(r.submitted, 2);
  EXPECT_NE(messages.str().find("dry run: 2 cell(s)"), std::string::npos) << messages.str();
  EXPECT_FALSE(fs::exists(out / "slurm" / "jobs.jsonl"));
  EXPECT_EQ(run_command("squeue -h | wc -l").output, "0\n");

  LaunchOptions no_wait;
  no_wait.wait = false;
  const auto start = std::chrono::steady_clock::now();
  const LaunchResult r2 = make_slurm_launcher(launcher_options(out, messages))->run(cells, no_wait, sink);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(r2.submitted, 2);
  EXPECT_NE(messages.str().find("gradsweep status"), std::string::npos) << messages.str();
  // Running the sweep again while those tasks are queued follows them instead of submitting them twice.
  std::ostringstream again;
  const LaunchResult r3 = make_slurm_launcher(launcher_options(out, again))->run(cells, {}, sink);
  EXPECT_EQ(r3.ok, 2) << again.str();
  EXPECT_NE(again.str().find("still in Slurm's queue"), std::string::npos) << again.str();
  EXPECT_EQ(lines_in(out / "slurm" / "jobs.jsonl"), 1u);
  for (const runs::PlannedCell& c : cells)
    EXPECT_TRUE(runs::is_cell_done(c.dir, c.config_hash))
        << read_text(c.dir / "status.json") << read_text(c.dir / "launcher.log");
}

TEST(SlurmLauncher, AFailingCellSaysWhyAndFailFastCancelsTheRest) {
  GRADSWEEP_REQUIRE_SLURM();
  const fs::path out = test::scratch_dir();
  runs::PlannedCell broken = make_cell(out, "broken", "single", 1, 4);
  std::string yaml = read_text(broken.config_file);
  yaml.replace(yaml.find("seq_len: 32"), 11, "seq_len: 999");  // longer than the model's block size
  test::write_text(broken.config_file, yaml);
  const runs::PlannedCell slow = make_cell(out, "slow", "ring", 2, 400);
  std::ostringstream messages;
  LaunchOptions options;
  options.fail_fast = true;
  RecordingSink sink;
  const LaunchResult r = make_slurm_launcher(launcher_options(out, messages))->run({broken, slow}, options, sink);
  EXPECT_EQ(r.failed, 1) << messages.str();
  EXPECT_EQ(r.interrupted, 1) << messages.str() << read_text(slow.dir / "status.json");
  EXPECT_TRUE(r.stopped);
  const runs::CellStatus b = runs::read_cell_status(broken.dir);
  EXPECT_EQ(b.state, runs::CellState::Failed);
  EXPECT_NE(b.reason.find("seq_len"), std::string::npos) << b.reason;
  EXPECT_NE(messages.str().find("--fail-fast"), std::string::npos) << messages.str();
  EXPECT_EQ(runs::read_cell_status(slow.dir).state, runs::CellState::Interrupted);
}

TEST(SlurmLauncher, RequeuedTaskResumesFromTheCheckpoint) {
  GRADSWEEP_REQUIRE_SLURM();
  // Was a flake (about 1 run in 5 under load) for two causes: ranks resuming from different checkpoint
  // steps after a kill mid-save (fixed in host/train: ranks agree on a step they all hold), and this test
  // lifting Slurm's requeue hold before the old run had ended (see release_requeued()). 8 of 8 loaded runs
  // pass since. GRADSWEEP_TEST_SLURM_REQUEUE=0 skips it.
  if (const char* run = std::getenv("GRADSWEEP_TEST_SLURM_REQUEUE"); run != nullptr && std::string(run) == "0")
    GTEST_SKIP() << "GRADSWEEP_TEST_SLURM_REQUEUE=0";
  const fs::path out = test::scratch_dir();
  const runs::PlannedCell cell = make_cell(out, "requeued", "ring", 2, 60);
  std::ostringstream messages;
  auto launcher = make_slurm_launcher(launcher_options(out, messages));
  LauncherThread run(*launcher, {cell}, {});
  const std::string job = wait_for_progress(cell, 8);
  ASSERT_FALSE(job.empty()) << "the cell did not start training: " << messages.str() << run.error()
                            << read_text(cell.dir / "launcher.log");
  const std::time_t requeued_at = std::time(nullptr);
  const test::CommandResult requeue = run_command("scontrol requeue " + job + " 2>&1");
  ASSERT_EQ(requeue.exit_code, 0) << requeue.output;
  test::release_requeued(job, requeued_at);
  const LaunchResult r = run.join();
  ASSERT_TRUE(run.error().empty()) << run.error();
  EXPECT_EQ(r.ok, 1) << read_text(cell.dir / "status.json") << read_text(cell.dir / "launcher.log");
  EXPECT_GT(resumed_step(cell.dir), 0) << read_text(cell.dir / "rank-0.log");
  EXPECT_NE(read_text(cell.dir / "launcher.log").find("(restart 1)"), std::string::npos)
      << read_text(cell.dir / "launcher.log");
  EXPECT_EQ(lines_in(cell.dir / "metrics.jsonl"), 60u);
}

TEST(SlurmLauncher, CancelledTaskIsInterruptedAndTheNextRunResumesIt) {
  GRADSWEEP_REQUIRE_SLURM();
  const fs::path out = test::scratch_dir();
  const runs::PlannedCell cell = make_cell(out, "cancelled", "single", 1, 60);
  std::ostringstream messages;
  auto launcher = make_slurm_launcher(launcher_options(out, messages));
  {
    LauncherThread run(*launcher, {cell}, {});
    const std::string job = wait_for_progress(cell, 8);
    ASSERT_FALSE(job.empty()) << "the cell did not start training: " << messages.str() << run.error()
                              << read_text(cell.dir / "launcher.log");
    ASSERT_EQ(run_command("scancel " + job).exit_code, 0);
    const LaunchResult r = run.join();
    ASSERT_TRUE(run.error().empty()) << run.error();
    EXPECT_EQ(r.interrupted, 1);
    const runs::CellStatus s = runs::read_cell_status(cell.dir);
    EXPECT_EQ(s.state, runs::CellState::Interrupted) << s.reason;
    EXPECT_NE(s.reason.find("CANCELLED"), std::string::npos) << s.reason;
    EXPECT_EQ(s.job, job);
  }
  // Running the sweep again submits the interrupted cell, which resumes from its checkpoint.
  RecordingSink sink;
  const LaunchResult r = launcher->run({cell}, {}, sink);
  EXPECT_EQ(r.ok, 1) << read_text(cell.dir / "status.json") << read_text(cell.dir / "launcher.log");
  EXPECT_GT(resumed_step(cell.dir), 0) << read_text(cell.dir / "rank-0.log");
  EXPECT_EQ(lines_in(out / "slurm" / "jobs.jsonl"), 2u);
}

}  // namespace
}  // namespace gradsweep::experiment
