// A checkpoint that does not fit the job resuming it is refused before anything changes, with a message
// that names the file and what does not fit: another strategy, another world size for a strategy that
// cannot reshard, another model shape, a missing or truncated file, ranks with no step in common. Real
// `gradsweep train` jobs under mpirun.
#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace gradsweep {
namespace {

namespace fs = std::filesystem;

fs::path write_cell(const fs::path& dir, const std::string& strategy) {
  const fs::path corpus = test::byte_corpus();
  const fs::path file = dir / "cell.yaml";
  test::write_text(
      file,
      "model: {name: gpt2, preset: gpt2-tiny, vocab_size: 257, block_size: 32}\n"
      "strategy: {name: " +
          strategy +
          "}\n"
          "data: {train: " +
          (corpus / "train.bin").string() + ", val: " + (corpus / "val.bin").string() +
          "}\ntrain: {steps: 6, batch_size: 12, seq_len: 32, lr: 3e-3, seed: 7}\n"
          "eval: {batches: 1}\ncheckpoint: {every: 3}\nmetrics: {peak_flops: 1e10}\nruntime: {threads: 1}\n");
  return file;
}

// `gradsweep train` on `ranks` ranks (a plain process for one), stopped after `stop_after` steps if > 0.
test::CommandResult train(int ranks, const fs::path& cell, const fs::path& out, const std::string& flags = "",
                          const std::string& env = "") {
  const std::string command =
      test::gradsweep_binary().string() + " train " + cell.string() + " --out " + out.string() + " " + flags;
  return test::run_command(ranks == 1 ? env + " " + command : test::mpirun(ranks, command, env, 120));
}

// Every file under `dir` with its size and modification time: what "nothing changed" is checked against.
std::map<std::string, std::pair<std::uintmax_t, fs::file_time_type>> snapshot(const fs::path& dir) {
  std::map<std::string, std::pair<std::uintmax_t, fs::file_time_type>> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files[e.path().string()] = {e.file_size(), e.last_write_time()};
  return files;
}

// A cell of `strategy` at `ranks`, stopped after 4 steps: its checkpoint is at step 3.
fs::path interrupted(const std::string& strategy, int ranks, const std::string& env = "") {
  const fs::path dir = test::scratch_dir();
  const auto r = train(ranks, write_cell(dir, strategy), dir / "cell", "--stop-after 4", env);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir / "cell" / "checkpoint" / "rank-0" / "step-3" / "state.json"));
  return dir;
}

TEST(CheckpointFit, AnotherStrategysCheckpointIsRefusedAndKept) {
  const fs::path dir = interrupted("ring", 2);
  const auto before = snapshot(dir / "cell" / "checkpoint");
  const auto r = train(2, write_cell(dir, "dps"), dir / "cell");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("checkpoint " + (dir / "cell" / "checkpoint").string() +
                          " (step 3) was written by strategy 'ring', but this job runs 'dps'"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(snapshot(dir / "cell" / "checkpoint"), before);
}

TEST(CheckpointFit, AStrategyThatCannotReshardIsRefusedAtAnotherSize) {
  const std::string plugins = "GRADSWEEP_PLUGIN_PATH=" GRADSWEEP_TEST_CONFORMANCE_PLUGINS;
  const fs::path dir = interrupted("periodic_average", 2, plugins);
  const auto before = snapshot(dir / "cell" / "checkpoint");
  const auto r = train(3, dir / "cell.yaml", dir / "cell", "", plugins);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("was written by 2 ranks, but this job has 3 and strategy 'periodic_average' cannot resume "
                          "at another world size"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(snapshot(dir / "cell" / "checkpoint"), before);
}

TEST(CheckpointFit, AnotherModelShapeIsRefusedNamingTheTensor) {
  const fs::path dir = interrupted("ring", 2);
  const auto r = train(2, dir / "cell.yaml", dir / "cell", "--set model.n_embd=32");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("'param/wte.weight' has shape [384, 64] in the checkpoint but [384, 32] in the model"),
            std::string::npos)
      << r.output;
}

TEST(CheckpointFit, ATruncatedShardIsNamedWhenResharding) {
  const fs::path dir = interrupted("zero2", 2);
  const fs::path shard = dir / "cell" / "checkpoint" / "rank-1" / "step-3" / "strategy.pt";
  fs::resize_file(shard, fs::file_size(shard) / 2);
  const auto r = train(3, dir / "cell.yaml", dir / "cell");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("cannot read checkpoint file " + shard.string() + " (truncated or not a checkpoint?)"),
            std::string::npos)
      << r.output;
}

TEST(CheckpointFit, AMissingRankHasNoStepInCommon) {
  const fs::path dir = interrupted("ring", 2);
  fs::remove_all(dir / "cell" / "checkpoint" / "rank-1" / "step-3");
  const auto r = train(2, dir / "cell.yaml", dir / "cell");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("the ranks' checkpoints have no step in common (newest per rank: rank 0: step 3)"),
            std::string::npos)
      << r.output;
}

TEST(CheckpointFit, AResumeAtAnotherSizeIsRecordedAndTheOldRanksAreClearedLater) {
  const fs::path dir = interrupted("ring", 3);
  const auto r = train(2, dir / "cell.yaml", dir / "cell");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("resharded from 3 ranks to 2"), std::string::npos) << r.output;
  const std::string summary = test::read_text(dir / "cell" / "summary.json");
  EXPECT_NE(summary.find("\"resharded\""), std::string::npos) << summary;
  EXPECT_NE(summary.find("\"from_world_size\": 3"), std::string::npos) << summary;
  // Step 6, written by 2 ranks, is complete: rank 2's checkpoints of the 3-rank job are gone.
  EXPECT_TRUE(fs::exists(dir / "cell" / "checkpoint" / "rank-1" / "step-6" / "state.json"));
  EXPECT_FALSE(fs::exists(dir / "cell" / "checkpoint" / "rank-2"));
}

}  // namespace
}  // namespace gradsweep
