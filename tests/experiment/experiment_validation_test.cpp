// Every problem an experiment file can have is reported before anything runs, all at once, each with
// file:line:column and the key. The base of every file is test::tiny_experiment: 6 lines, so the lines
// the tests add start at line 7.
#include "experiment_test_support.hpp"

#include <gtest/gtest.h>

namespace gradsweep {
namespace {

using test::has_problem;

std::vector<std::string> problems(const std::string& extra) {
  return test::plan_problems(test::scratch_dir(), test::tiny_experiment(extra));
}

#define EXPECT_PROBLEM(list, fragment)                                                             \
  EXPECT_TRUE(has_problem(list, fragment)) << "wanted: " << fragment << "\ngot:\n"                 \
                                           << [&] {                                                \
                                                std::string all;                                   \
                                                for (const auto& p : list) all += "  " + p + "\n"; \
                                                return all;                                        \
                                              }()

TEST(ExperimentValidation, UnknownTopLevelKey) {
  const auto p = problems("matrx: {strategy: [ring]}\n");
  EXPECT_PROBLEM(p, "exp.yaml:7:1: matrx: unknown top-level key");
}

TEST(ExperimentValidation, UnknownKeyInACellSection) {
  const auto p = problems("eval2: 1\n");
  EXPECT_PROBLEM(p, "exp.yaml:7:1: eval2: unknown top-level key");
  const auto q = test::plan_problems(test::scratch_dir(), test::tiny_experiment("") + "checkpoint:\n  evry: 5\n");
  EXPECT_PROBLEM(q, "exp.yaml:8:3: checkpoint.evry: unknown key");
}

TEST(ExperimentValidation, WrongTypeFromTheMatrixPointsIntoTheMatrix) {
  const auto p = problems("matrix:\n  train.steps: [4, many]\n");
  EXPECT_PROBLEM(p, "exp.yaml:8:20: train.steps: expected an integer, got 'many' (cell train.steps=many)");
}

TEST(ExperimentValidation, UnknownPluginListsTheAvailableOnes) {
  const auto p = problems("matrix:\n  strategy: [single, rign]\n");
  EXPECT_PROBLEM(p, "exp.yaml:8:22: strategy.name: unknown strategy plugin 'rign'; available: ");
  EXPECT_PROBLEM(p, "ring");
  const auto q = problems("matrix:\n  model: [gpt3]\n");
  EXPECT_PROBLEM(q, "exp.yaml:8:11: model.name: unknown model plugin 'gpt3'; available: gpt2, llama, lstm_lm");
}

TEST(ExperimentValidation, UnknownPluginOption) {
  const auto p = problems("matrix:\n  strategy: [{name: ps, mdoe: async}]\n");
  EXPECT_PROBLEM(p, "exp.yaml:8:25: strategy.mdoe: unknown key");
}

TEST(ExperimentValidation, SingleOnMoreThanOneRankIsImpossible) {
  // The plugin's own words (its check_plan), placed at the key that made the ranks.
  const auto p = problems("matrix:\n  nodes: [1, 2]\n");
  EXPECT_PROBLEM(p,
                 "exp.yaml:8:14: launcher.nodes: strategy 'single' runs on one rank, but the job has 2 (nodes x "
                 "ranks_per_node = 2 x 1); pick a data-parallel strategy (ps, dps, ring) for more (cell nodes=2)");
  EXPECT_EQ(p.size(), 1u);
}

TEST(ExperimentValidation, ABadChoiceIsRefusedByTheHostWithItsPosition) {
  const auto p = problems("matrix:\n  strategy: [{name: ring, algorithm: rign}]\n");
  EXPECT_PROBLEM(p, "exp.yaml:8:38: strategy.algorithm: 'rign' is not one of auto, ring, native, hierarchical");
  EXPECT_EQ(p.size(), 1u);
}

TEST(ExperimentValidation, WhatTheBackendCannotDoIsRefusedAtPlanTime) {
  // NCCL offers neither gradsweep's ring nor recv_any: refused by the strategies' plan checks, with the
  // backend's declared features (Communicator::features), before any process starts. Plain `ring` takes
  // the default algorithm, auto: NCCL's own allreduce there, accepted.
  const auto p = problems(
      "runtime: {comm: nccl}\nmatrix:\n  strategy: [{name: ring, algorithm: ring}, {name: ps, mode: async}, "
      "{name: ring, algorithm: native}, ring]\n  ranks_per_node: [2]\n");
  EXPECT_PROBLEM(p,
                 "strategy 'ring': algorithm ring is gradsweep's own allreduce over point-to-point, which the "
                 "nccl backend does not offer on 2 ranks; use algorithm: native");
  EXPECT_PROBLEM(p,
                 "strategy.mode: strategy 'ps': mode async serves gradients in the order they arrive (recv_any), "
                 "which the nccl backend does not offer");
  EXPECT_EQ(p.size(), 2u);
}

TEST(ExperimentValidation, AServerThatOnlyServesLeavesItsRankOutOfTheBatchSplit) {
  // 4 sequences over 3 ranks of which the server computes none: 2 each. The plugin says so (check_plan).
  const auto ok = problems("matrix:\n  strategy: [{name: ps, server_computes: false}]\n  ranks_per_node: [3]\n");
  EXPECT_TRUE(ok.empty()) << ok.front();
  const auto p = problems("matrix:\n  strategy: [{name: ps, server_computes: false}]\n  ranks_per_node: [4]\n");
  EXPECT_PROBLEM(p, "train.batch_size: 4 sequences do not split evenly over the 3 computing ranks");
}

TEST(ExperimentValidation, BatchThatDoesNotSplitOverTheRanks) {
  const auto q = problems("matrix: {strategy: [ring], ranks_per_node: [3]}\n");
  EXPECT_PROBLEM(q, "exp.yaml:4:31: train.batch_size: 4 sequences do not split evenly over the 3 computing ranks");
  const auto r = problems("matrix: {strategy: [ring], ranks_per_node: [2], train.micro_batch: [3]}\n");
  EXPECT_PROBLEM(r, "train.micro_batch: batch_size 4 is not a multiple of micro_batch x ranks = 3 x 2");
}

TEST(ExperimentValidation, SequenceLongerThanTheModel) {
  const auto p = problems("matrix: {train.seq_len: [16, 64]}\n");
  EXPECT_PROBLEM(p, "exp.yaml:7:30: train.seq_len: 64 is longer than the model's block size 32 (gpt2 as configured)");
}

TEST(ExperimentValidation, LauncherKeysAndTypes) {
  const auto p = problems("launcher:\n  nodez: 2\n  ranks_per_node: two\n  slurm: {partiton: gpu, extra: {a: 1}}\n");
  EXPECT_PROBLEM(p, "exp.yaml:8:3: launcher.nodez: unknown key");
  EXPECT_PROBLEM(p, "exp.yaml:9:19: launcher.ranks_per_node: expected an integer, got 'two'");
  EXPECT_PROBLEM(p, "exp.yaml:10:11: launcher.slurm.partiton: unknown key (did you mean 'partition'?)");
  EXPECT_PROBLEM(p, "launcher.slurm.extra: expected a list of sbatch option lines");
}

TEST(ExperimentValidation, SweepSectionShapes) {
  EXPECT_PROBLEM(problems("matrix:\n  strategy: ring\n"), "exp.yaml:8:13: matrix.strategy: expected a non-empty list");
  EXPECT_PROBLEM(problems("matrix: {strategy: [ring]}\nexclude:\n  - {nodes: 2}\n"),
                 "exp.yaml:9:6: exclude[0].nodes: not a matrix axis; axes: strategy");
  EXPECT_PROBLEM(problems("repeat: 0\n"), "exp.yaml:7:9: repeat: expected a positive integer");
  EXPECT_PROBLEM(problems("repeat: {seeds: [1, x]}\n"), "exp.yaml:7:21: repeat.seeds: expected an integer, got 'x'");
  EXPECT_PROBLEM(problems("include: {strategy: ring}\n"), "exp.yaml:7:10: include: expected a list of mappings");
}

TEST(ExperimentValidation, MissingDataRelativeToTheExperimentFile) {
  const auto dir = test::scratch_dir();
  std::string text = test::tiny_experiment("");
  const auto from = text.find("data: {"), to = text.find('\n', from);
  text.replace(from, to - from, "data: {train: shards/train.bin, val: shards/val.bin}");
  const auto p = test::plan_problems(dir, text);
  EXPECT_PROBLEM(p, "exp.yaml:3:15: data.train: no such file: " + (dir / "shards/train.bin").string());
  // A file that is there but is no shard is refused at plan time too, naming it.
  test::write_text(dir / "shards/train.bin", "x");
  test::write_text(dir / "shards/val.bin", "x");
  EXPECT_PROBLEM(test::plan_problems(dir, text),
                 "exp.yaml:3:15: data.train: " + (dir / "shards/train.bin").string() + ": only 1 bytes");
  for (const char* name : {"train.bin", "val.bin"})
    std::filesystem::copy_file(test::byte_corpus() / name, dir / "shards" / name,
                               std::filesystem::copy_options::overwrite_existing);
  EXPECT_TRUE(test::plan_problems(dir, text).empty());
}

TEST(ExperimentValidation, AllProblemsAtOnce) {
  const auto p = problems("launcher: {nodez: 1}\nmatrix:\n  strategy: [single, rign]\n  train.lr: [fast]\nbogus: 1\n");
  EXPECT_PROBLEM(p, "launcher.nodez: unknown key");
  EXPECT_PROBLEM(p, "strategy.name: unknown strategy plugin 'rign'");
  EXPECT_PROBLEM(p, "train.lr: expected a finite number, got 'fast'");
  EXPECT_PROBLEM(p, "bogus: unknown top-level key");
}

TEST(ExperimentValidation, CliReportsEveryProblemAndExitsNonZero) {
  const auto dir = test::scratch_dir();
  test::write_text(dir / "bad.yaml", test::tiny_experiment("matrix:\n  strategy: [rign]\n  train.steps: [x]\n"));
  for (const char* cmd : {"plan", "run"}) {
    const auto r = test::run_command(
        test::gradsweep(std::string(cmd) + " " + (dir / "bad.yaml").string() + " --out " + (dir / "out").string()));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("bad.yaml:8:14: strategy.name: unknown strategy plugin 'rign'"), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("bad.yaml:9:17: train.steps: expected an integer, got 'x'"), std::string::npos) << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "out" / "cells")) << "nothing runs when the file is invalid";
}

}  // namespace
}  // namespace gradsweep
