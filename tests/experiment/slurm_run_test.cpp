// `gradsweep run EXP.yaml --launcher slurm` as a user runs it, on the test's real Slurm: a small sweep whose
// cells need two resource shapes, submitted as job arrays, followed to the end, with results.csv written.
#include "experiment/slurm_cluster.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <regex>
#include <thread>

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;

std::size_t count_lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// provenance.json as the compute node wrote it (`gradsweep cell-provenance` in the batch script): every
// field of provenance.hpp, this machine as the host (the test cluster's only node), and both times.
void expect_complete_provenance(const fs::path& cell) {
  ASSERT_TRUE(fs::exists(cell / "provenance.json")) << cell << "\n" << read_text(cell / "launcher.log");
  const nlohmann::json p = nlohmann::json::parse(read_text(cell / "provenance.json"));
  for (const char* key : {"libtorch", "open_mpi", "nccl", "cuda", "host", "cpu", "gpu", "start", "end"})
    EXPECT_TRUE(p.contains(key) && p[key].is_string()) << key << " in " << p.dump();
  ASSERT_TRUE(p.contains("gradsweep")) << p.dump();
  EXPECT_TRUE(p["gradsweep"]["version"].is_string()) << p.dump();
  EXPECT_TRUE(p["gradsweep"]["commit"].is_string()) << p.dump();
  EXPECT_TRUE(p["gradsweep"]["dirty"].is_boolean()) << p.dump();
  EXPECT_EQ(p.value("host", ""), slurm_cluster()->node()) << p.dump();
  EXPECT_NE(p.value("open_mpi", "").find("Open MPI"), std::string::npos) << p.dump();
  const std::string start = p.value("start", ""), end = p.value("end", "");
  EXPECT_EQ(start.size(), 20u) << p.dump();  // 2025-01-01T12:00:00Z
  EXPECT_EQ(end.size(), 20u) << p.dump();
  EXPECT_LE(start, end) << p.dump();  // ISO 8601 UTC strings order like times
}

TEST(SlurmRun, SweepOfThreeCellsEndsWithEveryCellOkAndAResultsTable) {
  GRADSWEEP_REQUIRE_SLURM();
  const fs::path dir = scratch_dir();
  const fs::path corpus = byte_corpus();
  // single x1, ring x1, ring x2: two shapes (1 and 2 ranks per node), so two job arrays.
  write_text(dir / "sweep.yaml",
             "name: slurm-sweep\n"
             "model: {name: gpt2, preset: gpt2-tiny, vocab_size: 257, block_size: 32}\n"
             "data: {train: " +
                 (corpus / "train.bin").string() + ", val: " + (corpus / "val.bin").string() +
                 "}\n"
                 "train: {steps: 6, batch_size: 8, seq_len: 32, lr: 1e-3}\n"
                 "eval: {batches: 2}\n"
                 "metrics: {peak_flops: 1e10}\n"
                 "launcher: {threads: 1, slurm: {time: '00:10:00', max_concurrent: 2}}\n"
                 "matrix: {strategy: [single, ring], ranks_per_node: [1, 2]}\n"
                 "exclude: [{strategy: single, ranks_per_node: 2}]\n");
  const fs::path out = dir / "out";
  const std::string run = gradsweep_binary().string() + " run " + (dir / "sweep.yaml").string() + " --out " +
                          out.string() + " --launcher slurm 2>&1";
  const CommandResult r = run_command("timeout 240 " + run);
  ASSERT_EQ(r.exit_code, 0) << r.output << slurm_cluster()->logs();
  EXPECT_NE(r.output.find("submitted job array"), std::string::npos) << r.output;

  std::size_t cells = 0;
  for (const auto& cell : fs::directory_iterator(out / "cells")) {
    ++cells;
    const std::string status = read_text(cell.path() / "status.json");
    EXPECT_NE(status.find("\"state\": \"ok\""), std::string::npos) << cell.path() << ": " << status;
    EXPECT_NE(status.find("\"launcher\": \"slurm\""), std::string::npos) << status;
    EXPECT_TRUE(fs::exists(cell.path() / "summary.json")) << cell.path();
    expect_complete_provenance(cell.path());
  }
  EXPECT_EQ(cells, 3u);
  const std::string csv = read_text(out / "results.csv");
  EXPECT_EQ(count_lines(csv), 4u) << csv;  // header + 3 cells
  std::size_t arrays = 0;
  for (const auto& f : fs::directory_iterator(out / "slurm")) arrays += f.path().extension() == ".sbatch";
  EXPECT_EQ(arrays, 2u);

  // Everything is done: a second run submits nothing.
  const CommandResult again = run_command("timeout 60 " + run);
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(again.output.find("submitted job array"), std::string::npos) << again.output;
  const CommandResult status = run_command(gradsweep_binary().string() + " status " + out.string() + " 2>&1");
  EXPECT_EQ(status.exit_code, 0) << status.output;
}

// `gradsweep status DIR` after `--no-wait`: nobody follows the jobs, so status asks Slurm. While the tasks
// are queued it shows Slurm's state and writes nothing; once Slurm has cancelled them (the batch script never
// wrote an outcome, status.json still says running / pending) it shows and records them as interrupted.
TEST(SlurmRun, StatusOfANoWaitSweepAsksSlurmAndRecordsACancel) {
  GRADSWEEP_REQUIRE_SLURM();
  const fs::path dir = scratch_dir();
  const fs::path corpus = byte_corpus();
  // Two cells of one shape, one task at a time (%1): the first runs long, the second waits for it.
  write_text(dir / "sweep.yaml",
             "name: slurm-status\n"
             "model: {name: gpt2, preset: gpt2-tiny, vocab_size: 257, block_size: 32}\n"
             "strategy: {name: single}\n"
             "data: {train: " +
                 (corpus / "train.bin").string() + ", val: " + (corpus / "val.bin").string() +
                 "}\n"
                 "train: {steps: 5000, batch_size: 8, seq_len: 32}\n"
                 "eval: {batches: 2}\n"
                 "metrics: {peak_flops: 1e10}\n"
                 "launcher: {threads: 1, slurm: {max_concurrent: 1}}\n"
                 "matrix: {train.lr: [1e-3, 2e-3]}\n");
  const fs::path out = dir / "out";
  const CommandResult submitted =
      run_command("timeout 60 " + gradsweep_binary().string() + " run " + (dir / "sweep.yaml").string() + " --out " +
                  out.string() + " --launcher slurm --no-wait 2>&1");
  ASSERT_EQ(submitted.exit_code, 0) << submitted.output;
  const std::string status_command = gradsweep_binary().string() + " status " + out.string() + " 2>&1";
  auto status_until = [&](const std::regex& wanted, int timeout_s) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    CommandResult r;
    while (std::chrono::steady_clock::now() < until) {
      r = run_command(status_command);
      // 1: a cell is interrupted or failed (the end of this test); 0: done or still queued.
      if ((r.exit_code == 0 || r.exit_code == 1) && std::regex_search(r.output, wanted)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    return r;
  };
  // Slurm's view while the jobs are queued: one running, the other pending behind the array's cap.
  const CommandResult queued = status_until(std::regex("2 cells: 1 pending 1 running"), 90);
  ASSERT_NE(queued.output.find("2 cells: 1 pending 1 running"), std::string::npos)
      << queued.output << slurm_cluster()->logs();
  EXPECT_NE(queued.output.find("JobArrayTaskLimit"), std::string::npos) << queued.output;
  // Asking writes nothing while the tasks are queued.
  std::vector<std::string> before;
  std::string job;
  for (const auto& cell : fs::directory_iterator(out / "cells")) {
    before.push_back(read_text(cell.path() / "status.json"));
    const nlohmann::json s = nlohmann::json::parse(before.back());
    if (s.value("state", "") == "running") job = s.value("job", "");
  }
  ASSERT_FALSE(job.empty()) << queued.output;
  ASSERT_EQ(run_command(status_command).exit_code, 0);
  std::size_t i = 0;
  for (const auto& cell : fs::directory_iterator(out / "cells"))
    EXPECT_EQ(read_text(cell.path() / "status.json"), before[i++]) << cell.path();

  // Cancel the whole array: the running task is killed before its script can write an outcome.
  const std::string array_job = job.substr(0, job.find('_'));
  ASSERT_EQ(run_command("scancel " + array_job).exit_code, 0);
  const CommandResult ended = status_until(std::regex("2 cells: 2 interrupted"), 60);
  ASSERT_NE(ended.output.find("2 cells: 2 interrupted"), std::string::npos) << ended.output << slurm_cluster()->logs();
  EXPECT_NE(ended.output.find("CANCELLED"), std::string::npos) << ended.output;
  // ... and recorded: status.json says so now, without asking Slurm again.
  for (const auto& cell : fs::directory_iterator(out / "cells")) {
    const nlohmann::json s = nlohmann::json::parse(read_text(cell.path() / "status.json"));
    EXPECT_EQ(s.value("state", ""), "interrupted") << s.dump();
    EXPECT_NE(s.value("reason", "").find("CANCELLED"), std::string::npos) << s.dump();
    EXPECT_EQ(s.value("job", "").substr(0, array_job.size()), array_job) << s.dump();
  }
}

}  // namespace
}  // namespace gradsweep::test
