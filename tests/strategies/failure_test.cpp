// Bad input across ranks: models that differ are refused before any strategy communicates, and a rank
// killed in the middle of training ends the whole job, named, within seconds: never a hang.
#include "runs/cell_status.hpp"
#include "strategies/strategy_runs.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <sstream>

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;

std::string cell(const fs::path& dir, const std::string& name, const std::string& model_extra, int steps) {
  const fs::path corpus = byte_corpus();
  const fs::path file = dir / name;
  write_text(file, "model: {name: gpt2, preset: gpt2-tiny, vocab_size: 257, block_size: 32" + model_extra + "}\n" +
                       "strategy: {name: ring}\n" + "data: {train: " + (corpus / "train.bin").string() +
                       ", val: " + (corpus / "val.bin").string() + "}\n" + "train: {steps: " + std::to_string(steps) +
                       ", batch_size: 8, seq_len: 32}\neval: {batches: 1}\ncheckpoint: {every: 0}\n"
                       "metrics: {peak_flops: 1e10}\nruntime: {threads: 1}\n");
  return file.string();
}

TEST(RanksDisagree, ModelsOfDifferentShapesStopBeforeTheFirstCollective) {
  const fs::path dir = scratch_dir();
  const std::string bin = gradsweep_binary().string();
  const std::string out = " --out " + (dir / "out").string();
  // Two programs in one MPI job (MPMD): rank 0 trains a 64-wide model, rank 1 a 32-wide one.
  const auto r = run_command(mpirun(1, bin + " train " + cell(dir, "a.yaml", "", 5) + out + " : -np 1 " + bin +
                                           " train " + cell(dir, "b.yaml", ", n_embd: 32", 5) + out));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.exit_code, 124) << "hung:\n" << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("the ranks' models differ.*parameter [0-9]+ is '[a-z_.0-9]+ "
                                                     "\\[[0-9, ]+\\] Float' on rank 0 but '.*' on rank 1")))
      << r.output;
  // Nothing was trained, so no step was recorded.
  EXPECT_FALSE(fs::exists(dir / "out" / "metrics.jsonl") &&
               read_text(dir / "out" / "metrics.jsonl").find("\"step\"") != std::string::npos);
}

// Runs a 2-rank ring job, waits until it trains, sends `signal` to rank 1 and waits for the job to end.
// Prints "rc=<exit code> seconds=<from the signal to the end>" and the job's output.
CommandResult signal_rank_one(const fs::path& dir, const std::string& signal, const std::string& extra = "") {
  // (the scratch directory of the test: the cell directory is dir/out)
  const fs::path log = dir / "out" / "rank-1.log";
  const std::string job = mpirun(2,
                                 gradsweep_binary().string() + " train " + cell(dir, "cell.yaml", "", 100000) +
                                     " --out " + (dir / "out").string() + extra,
                                 "", 120);
  const std::string script =
      "(" + job + ") > " + (dir / "job.txt").string() + " 2>&1 & job=$!\n" +
      "for i in $(seq 600); do grep -q 'step ' " + (dir / "out" / "rank-0.log").string() +
      " 2>/dev/null && break; sleep 0.1; done\n" + "pid=$(sed -n 's/.*rank 1 of 2 is process \\([0-9]*\\).*/\\1/p' " +
      log.string() + ")\n" + "[ -n \"$pid\" ] || { echo 'rank 1 never started'; kill $job; exit 99; }\n" +
      "start=$(date +%s.%N); kill -" + signal + " $pid; wait $job; rc=$?\n" +
      "echo \"rc=$rc seconds=$(echo \"$(date +%s.%N) - $start\" | bc)\"; cat " + (dir / "job.txt").string();
  write_text(dir / "signal.sh", script);
  return run_command("bash " + (dir / "signal.sh").string());
}

struct Ending {
  int exit_code;
  double seconds;
};

Ending ending_of(const CommandResult& r) {
  std::smatch m;
  if (!std::regex_search(r.output, m, std::regex("rc=([0-9]+) seconds=([0-9.]+)"))) return {-1, 1e9};
  return {std::stoi(m[1]), std::stod(m[2])};
}

// Kills rank 1 with SIGKILL once it is training; mpirun must end the job and name the rank.
TEST(RankDies, KilledRankEndsTheJobWithinAMinute) {
  const CommandResult r = signal_rank_one(scratch_dir(), "KILL");
  const Ending end = ending_of(r);
  EXPECT_NE(end.exit_code, 0) << r.output;
  EXPECT_NE(end.exit_code, 124) << "the job hung until `timeout` ended it:\n" << r.output;
  EXPECT_LT(end.seconds, 60.0) << r.output;
  // Open MPI names the rank that died, and a sweep's results.csv says so (from the launcher's log).
  EXPECT_TRUE(std::regex_search(r.output, std::regex("rank 1 with PID [0-9]+ on node .* exited on signal 9")))
      << r.output;
  const fs::path out = scratch_dir() / "cell";
  write_text(out / "launcher.log", r.output);
  EXPECT_EQ(runs::classify_failure(out, end.exit_code), "killed: rank 1 signal 9");
}

// Stops rank 1 (SIGSTOP: alive but silent, as a stuck rank is). The other rank waits in a collective
// until runtime.comm_timeout ends the job, naming the call it was stuck in.
// Rank 0's flight recorder dump, and rank 1's missing one, name rank 1 and the collective.
TEST(RankHangs, ConfiguredCommTimeoutEndsTheJob) {
  const fs::path dir = scratch_dir();
  const CommandResult r = signal_rank_one(dir, "STOP", " --set runtime.comm_timeout=3");
  const Ending end = ending_of(r);
  EXPECT_EQ(end.exit_code, 3) << r.output;
  EXPECT_LT(end.seconds, 45.0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("on rank 0 of 2 has waited [0-9]+ s \\(limit 3 s"))) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("hang: rank 1 did not finish [a-z_ ]+ #[0-9]+: rank 1 did not "
                                                     "answer \\(stopped, or dead\\); rank 0 finished #[0-9]+ and "
                                                     "waits in [a-z_ ]+ of [0-9]+ [a-z0-9]+")))
      << r.output;
  const fs::path dumps = dir / "out" / "flight-recorder";
  EXPECT_TRUE(fs::exists(dumps / "rank-0.json")) << r.output;
  EXPECT_TRUE(std::regex_match(runs::classify_failure(dir / "out", end.exit_code),
                               std::regex("hang: rank 1 did not finish [a-z_ ]+ #[0-9]+")));
}

// A cell with the test strategy `misbehaving` (tests/strategies/plugins) on 2 ranks.
CommandResult misbehave(const fs::path& dir, const std::string& how, const std::string& extra) {
  const std::string config = cell(dir, "cell.yaml", "", 6);
  write_text(config, read_text(config) + "plugins: {paths: [" + GRADSWEEP_TEST_STRATEGY_PLUGINS + "]}\n");
  return run_command(mpirun(2,
                            gradsweep_binary().string() + " train " + config + " --out " + (dir / "out").string() +
                                " --set strategy.name=misbehaving --set strategy.how=" + how +
                                " --set runtime.comm_timeout=3" + extra,
                            "", 90));
}

// runtime.check_collectives stops the job at the first collective whose size differs, naming both ranks'
// calls and the collective's number, long before the watchdog would.
TEST(RanksDisagree, CheckNamesARankThatSendsAnotherSize) {
  const fs::path dir = scratch_dir();
  const auto start = std::chrono::steady_clock::now();
  const CommandResult r = misbehave(dir, "size", " --set runtime.check_collectives=true");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_LT(seconds, 60.0) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m,
                                std::regex("collective mismatch \\(runtime.check_collectives\\): rank 1 "
                                           "issued allreduce of ([0-9]+) float32 sum where rank 0 issued "
                                           "allreduce of ([0-9]+) float32 sum, collective #([0-9]+)")))
      << r.output;
  EXPECT_EQ(std::stol(m[1]) + 1, std::stol(m[2]));
  EXPECT_TRUE(fs::exists(dir / "out" / "flight-recorder" / "rank-0.json")) << r.output;
  EXPECT_TRUE(fs::exists(dir / "out" / "flight-recorder" / "rank-1.json")) << r.output;
  EXPECT_EQ(runs::classify_failure(dir / "out", r.exit_code), "mismatch: allreduce #" + m[3].str());
}

TEST(RanksDisagree, CheckNamesARankThatSkipsACollective) {
  const fs::path dir = scratch_dir();
  const CommandResult r = misbehave(dir, "skip", " --set runtime.check_collectives=true");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("rank 1 issued allreduce of [0-9]+ float32 sum where rank 0 "
                                                     "issued allreduce of [0-9]+ float32 sum, collective #[0-9]+")))
      << r.output;
}

// Without the check, a rank that skips a collective leaves the ranks in allreduces of different sizes:
// undefined in MPI (seen: Open MPI's ring allreduce corrupting the heap, "double free or corruption",
// SIGABRT). The job must still end, not hang.
TEST(RanksDisagree, SkippedCollectiveWithoutTheCheckEndsTheJob) {
  const fs::path dir = scratch_dir();
  const auto start = std::chrono::steady_clock::now();
  const CommandResult r = misbehave(dir, "skip", "");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.exit_code, 124) << "hung:\n" << r.output;
  EXPECT_LT(seconds, 60.0) << r.output;
}

// A sweep goes on past cells that failed and says in results.csv's `failure` column what ended each.
TEST(SweepFailures, ResultsSayWhichRankAndCollective) {
  const fs::path dir = scratch_dir();
  const fs::path corpus = byte_corpus();
  write_text(dir / "s.yaml",
             "name: forensics\nmodel: {name: gpt2, preset: gpt2-tiny, vocab_size: 257, block_size: 32}\n"
             "strategy: {name: misbehaving, step: 2}\ndata: {train: " +
                 (corpus / "train.bin").string() + ", val: " + (corpus / "val.bin").string() +
                 "}\ntrain: {steps: 6, batch_size: 8, seq_len: 32}\neval: {batches: 1}\n"
                 "metrics: {peak_flops: 1e10}\nruntime: {comm_timeout: 3, check_collectives: true}\n"
                 "plugins: {paths: [" +
                 GRADSWEEP_TEST_STRATEGY_PLUGINS +
                 "]}\nlauncher: {threads: 1}\ninclude:\n"
                 "  - {strategy.how: size, ranks_per_node: 2}\n  - {strategy.how: stop, ranks_per_node: 2}\n");
  const auto r = run_command("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout -k 5 200 " +
                             gradsweep_binary().string() + " run " + (dir / "s.yaml").string() + " --out " +
                             (dir / "out").string());
  EXPECT_NE(r.output.find("0 ok, 2 failed"), std::string::npos) << r.output;
  const std::string csv = read_text(dir / "out" / "results.csv");
  EXPECT_NE(csv.find(",status,failure,reason"), std::string::npos) << csv;
  // report.md's table shows it too.
  EXPECT_NE(read_text(dir / "out" / "report.md").find("| failure |"), std::string::npos);
  EXPECT_TRUE(std::regex_search(csv, std::regex("size,2,failed,mismatch: allreduce #[0-9]+,"))) << csv;
  EXPECT_TRUE(std::regex_search(csv, std::regex("stop,2,failed,hang: rank 1 did not finish allreduce #[1-9][0-9]*,")))
      << csv;
}

// Each rank saves its own checkpoint; a job killed while saving can leave rank 0 with step 8 and rank 1
// still at step 4. The ranks must resume together from step 4, and the run then ends as if never cut.
TEST(Resume, RanksHoldingDifferentCheckpointsResumeFromTheNewestStepAllHold) {
  const fs::path dir = scratch_dir();
  const std::string config = cell(dir, "c.yaml", "", 12);
  const auto train = [&](const std::string& out, const std::string& extra) {
    return run_command(mpirun(2,
                              gradsweep_binary().string() + " train " + config + " --out " + (dir / out).string() +
                                  " --set checkpoint.every=4" + extra,
                              "", 120));
  };
  const auto losses = [&](const std::string& out) {
    std::vector<double> values;
    std::istringstream lines(read_text(dir / out / "metrics.jsonl"));
    for (std::string line; std::getline(lines, line);) values.push_back(nlohmann::json::parse(line).at("loss"));
    return values;
  };
  const auto whole = train("whole", "");
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  const auto cut = train("resumed", " --stop-after 10");  // both ranks hold steps 4 and 8
  ASSERT_EQ(cut.exit_code, 0) << cut.output;
  const fs::path checkpoints = dir / "resumed" / "checkpoint";
  ASSERT_TRUE(fs::exists(checkpoints / "rank-1" / "step-8" / "state.json"));
  fs::remove_all(checkpoints / "rank-1" / "step-8");  // as if rank 1 died saving step 8
  fs::create_directories(checkpoints / "rank-1" / "step-8.staging");
  const auto resumed = train("resumed", "");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(read_text(dir / "resumed" / "rank-0.log").find("at step 4"), std::string::npos) << resumed.output;
  EXPECT_EQ(losses("resumed"), losses("whole"));  // bit for bit
  // Each rank keeps its two newest checkpoints only.
  EXPECT_TRUE(fs::exists(checkpoints / "rank-0" / "step-12") && fs::exists(checkpoints / "rank-0" / "step-8"));
  EXPECT_FALSE(fs::exists(checkpoints / "rank-0" / "step-4"));
}

}  // namespace
}  // namespace gradsweep::test
