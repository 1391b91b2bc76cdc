// `gradsweep run EXP.yaml --launcher slurm` as a user runs it, on the test's real Slurm: a small sweep whose
// cells need two resource shapes, submitted as job arrays, followed to the end, with results.csv written.
#include "experiment/slurm_cluster.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;

std::size_t count_lines(const std::string& text) { return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')); }

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
  EXPECT_LE(start, end) << p.dump();         // ISO 8601 UTC strings order like times
}

TEST(SlurmRun, SweepOfThreeCellsEndsWithEveryCellOkAndAResultsTable) {
  GRADSWEEP_REQUIRE_SLURM();
  const fs::path dir = scratch_dir();
  const fs::path corpus = byte_corpus();
  // single x1, ring x1, ring x2: two shapes (1 and 2 ranks per node), so two job arrays.
  write_text(dir / "sweep.yaml",
             "name: slurm-sweep\n"
             "model: {name: gpt2, preset: gpt2-tiny, vocab_size: 257, block_size: 32}\n"
             "data: {train: " + (corpus / "train.bin").string() + ", val: " + (corpus / "val.bin").string() + "}\n"
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

}  // namespace
}  // namespace gradsweep::test
