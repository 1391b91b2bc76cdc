// Bad input across ranks: models that differ are refused before any strategy communicates, and a rank
// killed in the middle of training ends the whole job, named, within seconds: never a hang.
#include "strategies/strategy_runs.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <regex>

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

// Kills rank 1 with SIGKILL once it is training; mpirun must end the job and name the rank.
TEST(RankDies, KilledRankEndsTheJobWithinAMinute) {
  const fs::path dir = scratch_dir();
  const fs::path log = dir / "out" / "rank-1.log";
  const std::string job = mpirun(2, gradsweep_binary().string() + " train " + cell(dir, "cell.yaml", "", 100000) +
                                        " --out " + (dir / "out").string(), "", 120);
  const std::string script =
      "(" + job + ") > " + (dir / "job.txt").string() + " 2>&1 & job=$!\n" +
      "for i in $(seq 600); do grep -q 'step ' " + (dir / "out" / "rank-0.log").string() +
      " 2>/dev/null && break; sleep 0.1; done\n" +
      "pid=$(sed -n 's/.*rank 1 of 2 is process \\([0-9]*\\).*/\\1/p' " + log.string() + ")\n" +
      "[ -n \"$pid\" ] || { echo 'rank 1 never started'; kill $job; exit 99; }\n" +
      "start=$(date +%s.%N); kill -9 $pid; wait $job; rc=$?\n" +
      "echo \"rc=$rc seconds=$(echo \"$(date +%s.%N) - $start\" | bc)\"; cat " + (dir / "job.txt").string();
  write_text(dir / "kill.sh", script);
  const auto r = run_command("bash " + (dir / "kill.sh").string());
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex("rc=([0-9]+) seconds=([0-9.]+)"))) << r.output;
  EXPECT_NE(std::stoi(m[1]), 0) << r.output;
  EXPECT_NE(std::stoi(m[1]), 124) << "the job hung until `timeout` ended it:\n" << r.output;
  EXPECT_LT(std::stod(m[2]), 60.0) << r.output;
  // Open MPI names the rank that died.
  EXPECT_TRUE(std::regex_search(r.output, std::regex("rank 1 with PID [0-9]+ on node .* exited on signal 9")))
      << r.output;
}

}  // namespace
}  // namespace gradsweep::test
