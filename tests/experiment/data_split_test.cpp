// Data at any vocabulary and size through the real CLI: a split of many shards (directory, glob, list)
// plans and trains; a split the model cannot embed (an id >= model.vocab_size, 16- or 32-bit), a glob
// matching nothing, or a corrupt shard is refused by `gradsweep plan` / `gradsweep run` with the file named
// at file:line:column, before any cell starts.
#include "experiment_test_support.hpp"

#include <gtest/gtest.h>

#include <fstream>

namespace gradsweep {
namespace {
namespace fs = std::filesystem;

using test::kConfigError;

// The byte data set of one fortune file, as shards of 3000 tokens: DIR/train/, DIR/val/.
fs::path sharded_byte_data(const fs::path& dir) {
  const auto r =
      test::run_command(test::gradsweep("prepare --tokenizer byte --input /usr/share/games/fortunes/tao "
                                        "--val-fraction 0.2 --shard-tokens 3000 --out " +
                                        (dir / "data").string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return dir / "data";
}

// An experiment like test::tiny_experiment, with its own model and data lines (lines 1 and 3).
std::string experiment(const std::string& model_line, const std::string& data_line) {
  return model_line + "\nstrategy: {name: single}\n" + data_line +
         "\ntrain: {steps: 2, batch_size: 4, seq_len: 16, lr: 1e-3}\neval: {batches: 1}\n"
         "metrics: {peak_flops: 1e11, log_every: 1}\n";
}

test::CommandResult cli(const std::string& command, const fs::path& dir, const std::string& text) {
  test::write_text(dir / "exp.yaml", text);
  return test::run_command("timeout 300 " + test::gradsweep(command + " " + (dir / "exp.yaml").string() + " --out " +
                                                            (dir / "out").string()));
}

const std::string kTinyModel = "model: {name: gpt2, preset: gpt2-tiny, vocab_size: 257, block_size: 32}";

TEST(DataSplits, ADirectoryGlobOrListOfShardsPlansAndTrains) {
  const fs::path dir = test::scratch_dir();
  const fs::path data = sharded_byte_data(dir);
  // train: a list of a file and a glob (quoted: [ ] are YAML's too); val: a directory.
  const std::string split = "data: {train: [" + (data / "train" / "train_000000.bin").string() + ", '" +
                            (data / "train" / "train_00000[1-9].bin").string() + "'], val: " + (data / "val").string() +
                            "}";
  const auto r = cli("run", dir, experiment(kTinyModel, split));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto cells = fs::directory_iterator(dir / "out" / "cells");
  const fs::path cell = cells->path();
  EXPECT_TRUE(fs::exists(cell / "summary.json")) << r.output;
  // The resolved cell keeps the list, absolute.
  const std::string yaml = test::read_text(cell / "cell.yaml");
  EXPECT_NE(yaml.find((data / "train" / "train_00000[1-9].bin").string()), std::string::npos) << yaml;
  // Every training token was read as one stream: 4 shards of at most 3000 tokens.
  EXPECT_TRUE(fs::exists(data / "train" / "train_000003.bin"));
}

TEST(DataSplits, AGlobMatchingNothingOrACorruptShardIsRefusedWithItsPosition) {
  const fs::path dir = test::scratch_dir();
  const fs::path data = sharded_byte_data(dir);
  const std::string glob = (data / "nothing_*.bin").string();
  auto r =
      cli("plan", dir, experiment(kTinyModel, "data: {train: " + (data / "train").string() + ", val: " + glob + "}"));
  EXPECT_EQ(r.exit_code, kConfigError) << r.output;
  EXPECT_NE(r.output.find("exp.yaml:3:" + std::to_string(22 + (data / "train").string().size()) +
                          ": data.val: " + glob + ": the glob matches no file"),
            std::string::npos)
      << r.output;

  // A shard cut short (a copy that did not finish): the planner names it, the run never starts.
  const fs::path victim = data / "train" / "train_000001.bin";
  fs::resize_file(victim, fs::file_size(victim) - 10);
  r = cli(
      "run", dir,
      experiment(kTinyModel, "data: {train: " + (data / "train").string() + ", val: " + (data / "val").string() + "}"));
  EXPECT_EQ(r.exit_code, kConfigError) << r.output;
  EXPECT_NE(r.output.find("exp.yaml:3:15: data.train: " + victim.string()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("truncated"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "out" / "cells")) << r.output;
}

TEST(DataSplits, IdsTheModelCannotEmbedAreRefusedAtPlanTimeNamingTheFileAndKey) {
  const fs::path dir = test::scratch_dir();
  const fs::path data = sharded_byte_data(dir);
  const std::string split = "data: {train: " + (data / "train").string() + ", val: " + (data / "val").string() + "}";
  // Byte ids reach 256 (end-of-text): a 200-row embedding cannot hold them.
  auto r =
      cli("run", dir, experiment("model: {name: gpt2, preset: gpt2-tiny, vocab_size: 200, block_size: 32}", split));
  EXPECT_EQ(r.exit_code, kConfigError) << r.output;
  EXPECT_NE(r.output.find("exp.yaml:1:52: model.vocab_size: 200 (gpt2 as configured) is too small for data.train: " +
                          (data / "train").string()),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("holds token id 256 (16-bit ids); set model.vocab_size to at least 257"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "out" / "cells")) << r.output;

  // 32-bit data (a word vocabulary of 72,002 ids: 90 training documents of 800 distinct words) on the
  // 257-id model: refused with the width named.
  {
    std::ofstream text(dir / "words.txt");
    for (int d = 0; d < 100; ++d) {
      for (int w = 0; w < 800; ++w) text << "w" << (d * 800 + w) << (w % 20 == 19 ? "\n" : " ");
      text << "\n\n";
    }
  }
  const auto p =
      test::run_command(test::gradsweep("prepare --tokenizer word --vocab 80000 --val-fraction 0.1 --input " +
                                        (dir / "words.txt").string() + " --out " + (dir / "wide").string()));
  ASSERT_EQ(p.exit_code, 0) << p.output;
  const std::string wide =
      "data: {train: " + (dir / "wide" / "train.bin").string() + ", val: " + (dir / "wide" / "val.bin").string() + "}";
  r = cli("plan", dir, experiment(kTinyModel, wide));
  EXPECT_EQ(r.exit_code, kConfigError) << r.output;
  EXPECT_NE(r.output.find("model.vocab_size: 257 (gpt2 as configured) is too small for data.train: " +
                          (dir / "wide" / "train.bin").string()),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("(32-bit ids)"), std::string::npos) << r.output;
  // The same data with the tokenizer's vocabulary plans.
  r = cli("plan", dir, experiment("model: {name: gpt2, preset: gpt2-tiny, vocab_size: 72002, block_size: 32}", wide));
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

}  // namespace
}  // namespace gradsweep
