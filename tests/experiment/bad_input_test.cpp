// Bad input through the real CLI (issue 15): each ends with exit 2 and a message naming the key at
// file:line:column before anything runs, where before it trained silently, crashed (SIGFPE, bad_alloc)
// or ran out of memory.
#include "experiment_test_support.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace gradsweep {
namespace {
namespace fs = std::filesystem;

using test::kConfigError;

// `gradsweep train` on a cell whose third line is `train_line` (lines 1-2: model and data), plus `extra`.
test::CommandResult train(const std::string& train_line, const std::string& extra = "",
                          const std::string& metrics = "{peak_flops: 1e11}") {
  const fs::path dir = test::scratch_dir();
  const fs::path corpus = test::byte_corpus();
  test::write_text(dir / "c.yaml",
                   "model: {name: gpt2, preset: gpt2-tiny, vocab_size: 257, block_size: 32}\n"
                   "data: {train: " +
                       (corpus / "train.bin").string() + ", val: " + (corpus / "val.bin").string() + "}\n" +
                       train_line + "\n" + "eval: {batches: 1}\nmetrics: " + metrics + "\n" + extra);
  return test::run_command("timeout 120 " +
                           test::gradsweep("train " + (dir / "c.yaml").string() + " --out " + (dir / "o").string()));
}

// `gradsweep plan` on test::tiny_experiment(extra) (6 lines, so `extra` starts at line 7).
test::CommandResult plan(const std::string& extra, const std::string& flags = "") {
  const fs::path dir = test::scratch_dir();
  test::write_text(dir / "exp.yaml", test::tiny_experiment(extra));
  return test::run_command("timeout 120 " + test::gradsweep("plan " + (dir / "exp.yaml").string() + " --out " +
                                                            (dir / "out").string() + " " + flags));
}

#define EXPECT_REFUSED(result, fragment)                                                           \
  do {                                                                                             \
    EXPECT_EQ((result).exit_code, kConfigError) << (result).output;                                \
    EXPECT_NE((result).output.find(fragment), std::string::npos) << (result).output;               \
    EXPECT_EQ((result).output.find("step "), std::string::npos) << "trained: " << (result).output; \
  } while (0)

TEST(BadInput, DuplicateKeyInOneMappingNamesBothPlaces) {
  // Trained 3 steps before: iteration saw the second `steps`.
  const auto r = train("train: {steps: 2, batch_size: 4, seq_len: 32, steps: 3}");
  EXPECT_REFUSED(r, "c.yaml:3:47: train.steps: duplicate key (first at line 3:9)");
}

TEST(BadInput, AValueOutsideAPluginsDeclaredChoicesIsRefusedByTheHost) {
  // ring declares algorithm's choices (SDK 1.4): the host refuses 'rign' with its position; the plugin
  // never sees it.
  const auto r = train("train: {steps: 2, batch_size: 4, seq_len: 32}", "strategy: {name: ring, algorithm: rign}\n");
  EXPECT_REFUSED(r, "c.yaml:6:35: strategy.algorithm: 'rign' is not one of auto, ring, native, hierarchical");
}

TEST(BadInput, DuplicateSectionNamesBothLines) {
  // The first `train:` won before, silently.
  const auto r =
      train("train: {steps: 2, batch_size: 4, seq_len: 32}", "train: {steps: 3, batch_size: 4, seq_len: 32}\n");
  EXPECT_REFUSED(r, "c.yaml:6:1: train: duplicate key (first at line 3:1)");
}

TEST(BadInput, DuplicateKeyInAnExperimentFile) {
  const auto r = plan("matrix: {train.lr: [1e-3]}\nmatrix: {train.lr: [2e-3]}\n");
  EXPECT_REFUSED(r, "exp.yaml:8:1: matrix: duplicate key (first at line 7:1)");
  const auto s = plan("launcher: {threads: 1, threads: 2}\n");
  EXPECT_REFUSED(s, "exp.yaml:7:24: launcher.threads: duplicate key (first at line 7:12)");
}

TEST(BadInput, BatchSizeWhoseTokenCountOverflowsIsOutOfRange) {
  // 2^58 x 64 tokens wrapped to 0 and divided: SIGFPE (exit 136).
  const auto r = train("train: {steps: 2, batch_size: 288230376151711744, seq_len: 64}");
  EXPECT_REFUSED(r, "c.yaml:3:31: train.batch_size: must be in [1, 1048576], got 288230376151711744");
}

TEST(BadInput, LogEveryZeroIsOutOfRange) {
  // `step % 0` in the trainer: SIGFPE.
  const auto r = train("train: {steps: 2, batch_size: 4, seq_len: 16}", "checkpoint: {every: -1}\n");
  EXPECT_REFUSED(r, "c.yaml:6:21: checkpoint.every: must be in [0, 1000000000], got -1");
  const auto s = train("train: {steps: 2, batch_size: 4, seq_len: 16}", "", "{peak_flops: 1e11, log_every: 0}");
  EXPECT_REFUSED(s, "c.yaml:5:40: metrics.log_every: must be in [1, 1000000000], got 0");
}

TEST(BadInput, ThreadsBeyondTheMachineAreRefused) {
  // libgomp: Out of memory, or a hang under a memory limit.
  const auto r = train("train: {steps: 2, batch_size: 4, seq_len: 16}", "runtime: {threads: 1e9}\n");
  EXPECT_REFUSED(r, "c.yaml:6:20: runtime.threads: must be in [0, 1024], got 1e9");
  const int hardware = static_cast<int>(std::thread::hardware_concurrency());
  const std::string too_many = std::to_string(std::min(1024, 4 * hardware + 1));
  if (4 * hardware + 1 <= 1024) {
    const auto s = train("train: {steps: 2, batch_size: 4, seq_len: 16}", "runtime: {threads: " + too_many + "}\n");
    EXPECT_REFUSED(s, "c.yaml:6:20: runtime.threads: " + too_many + " threads per rank is more than 4 x the " +
                          std::to_string(hardware) + " hardware threads of this machine");
  }
  const auto p = plan("launcher: {threads: 100000}\n");
  EXPECT_REFUSED(p, "exp.yaml:7:21: launcher.threads: must be in [0, 1024], got 100000");
}

TEST(BadInput, NonFiniteNumbersAreRefusedWithTheirPlace) {
  // inf trained a step and diverged; nan was refused without a place.
  const auto r = train("train: {steps: 2, batch_size: 4, seq_len: 16, lr: inf}");
  EXPECT_REFUSED(r, "c.yaml:3:51: train.lr: expected a finite number, got 'inf'");
  const auto s = train("train: {steps: 2, batch_size: 4, seq_len: 16, lr: .nan}");
  EXPECT_REFUSED(s, "c.yaml:3:51: train.lr: expected a finite number, got '.nan'");
  // A plugin's number goes through the same parser.
  const auto p = plan("matrix:\n  model: [{name: gpt2, preset: gpt2-tiny, block_size: 32, dropout: -inf}]\n");
  EXPECT_REFUSED(p, "exp.yaml:8:68: model.dropout: expected a finite number, got '-inf'");
  // An integer key does not take one either (inf was cast to int64: undefined).
  const auto q = train("train: {steps: inf, batch_size: 4, seq_len: 16}");
  EXPECT_REFUSED(q, "c.yaml:3:16: train.steps: expected an integer, got 'inf'");
}

TEST(BadInput, HugeRepeatNamesTheKey) {
  // std::bad_alloc, naming nothing.
  const auto r = plan("repeat: 1000000000\n");
  EXPECT_REFUSED(r, "exp.yaml:7:9: repeat: 1000000000 repetitions is more than the 1000 allowed");
}

// "[0, 1, ..., n-1]"
std::string values(int n) {
  std::string text;
  for (int i = 0; i < n; ++i) text += (i ? ", " : "") + std::to_string(i);
  return "[" + text + "]";
}

TEST(BadInput, SweepBeyondTheCellLimitIsRefusedWithCountAndAxes) {
  // 10^6 cells: plan neither refused nor finished.
  const std::string matrix = "matrix:\n  train.warmup_steps: " + values(100) + "\n  train.seed: " + values(100) +
                             "\n  eval.batches: " + values(100) + "\n";
  const auto r = plan(matrix);
  EXPECT_REFUSED(r,
                 "exp.yaml:8:3: matrix: 1000000 cells (train.warmup_steps 100 x train.seed 100 x eval.batches 100) "
                 "is more than the limit of 10000; narrow the sweep, or raise the limit with --max-cells N");
  // The limit is the user's to raise; repeats count.
  const auto small = plan("matrix:\n  train.warmup_steps: " + values(30) + "\nrepeat: 2\n", "--max-cells 50");
  EXPECT_REFUSED(small, "matrix: 60 cells ((train.warmup_steps 30) x repeat 2) is more than the limit of 50");
  const auto raised = plan("matrix:\n  train.warmup_steps: " + values(30) + "\nrepeat: 2\n", "--max-cells 60");
  EXPECT_EQ(raised.exit_code, 0) << raised.output;
  EXPECT_NE(raised.output.find("60 cells"), std::string::npos) << raised.output;
}

TEST(BadInput, SequenceLongerThanAPresetsBlockSizeIsRefusedAtPlanTime) {
  // gpt2-tiny's block size is 64 and no model.block_size is written: plan accepted seq_len 128 and the
  // cell failed once launched. The plugin, asked for the model it builds, decides.
  const auto r = plan("matrix:\n  model: [{name: gpt2, preset: gpt2-tiny}]\n  train.seq_len: [64, 128]\n");
  EXPECT_REFUSED(r, "exp.yaml:9:23: train.seq_len: 128 is longer than the model's block size 64 (gpt2 as configured)");
  EXPECT_EQ(r.output.find("seq_len: 64 is longer"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace gradsweep
