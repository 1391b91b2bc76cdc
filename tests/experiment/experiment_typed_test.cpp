// The experiment read once into its typed form (experiment_file.hpp, sweep_sections.hpp), the cells' trees
// made from it (cell_tree.hpp), and the one dotted-path setter that --set and the matrix share
// (config/key_path.hpp).
#include "experiment_test_support.hpp"

#include "config/cell_config.hpp"
#include "config/key_path.hpp"
#include "experiment/plan/cell_tree.hpp"
#include "experiment/plan/experiment_file.hpp"
#include "experiment/plan/sweep_matrix.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

namespace gradsweep {
namespace {
namespace fs = std::filesystem;

// "file:line:column" of a node, 1-based as messages print it.
std::string where(const YAML::Node& node) {
  return std::to_string(node.Mark().line + 1) + ":" + std::to_string(node.Mark().column + 1);
}

experiment::ExperimentFile read(const fs::path& dir, const std::string& text,
                                const std::vector<std::string>& overrides = {}) {
  test::write_text(dir / "exp.yaml", text);
  return experiment::load_experiment_file(dir / "exp.yaml", overrides);
}

const std::string kFull =
    "name: typed-demo\n"                                      // 1
    "description: every section once\n"                       // 2
    "model: {name: gpt2, preset: gpt2-tiny}\n"                // 3
    "strategy: {name: single}\n"                              // 4
    "data: {train: shards/train.bin, val: shards/val.bin}\n"  // 5
    "train: {steps: 4, batch_size: 4, seq_len: 16}\n"         // 6
    "eval: {batches: 1}\n"                                    // 7
    "checkpoint: {every: 2}\n"                                // 8
    "metrics: {log_every: 1}\n"                               // 9
    "runtime: {threads: 1}\n"                                 // 10
    "tracking: {mlflow: ''}\n"                                // 11
    "plugins: {paths: [extra_plugins, /abs/plugins]}\n"       // 12
    "launcher: {nodes: 1, ranks_per_node: 2}\n"               // 13
    "matrix:\n"                                               // 14
    "  strategy: [ring, {name: ps, mode: async}]\n"           // 15
    "  train.lr: [1e-3, 2e-3]\n"                              // 16
    "exclude:\n"                                              // 17
    "  - {strategy: ring, train.lr: [2e-3]}\n"                // 18
    "include:\n"                                              // 19
    "  - {strategy: dps, strategy.buckets: 2}\n"              // 20
    "repeat: {seeds: [7, 9]}\n"                               // 21
    "report: {baseline: ring, target_loss: 5.5}\n";           // 22

TEST(ExperimentTyped, EverySectionOfAFullFileReachesTheTypedForm) {
  const fs::path dir = test::scratch_dir();
  const experiment::ExperimentFile exp = read(dir, kFull);
  EXPECT_TRUE(exp.problems.empty()) << (exp.problems.empty() ? "" : exp.problems.front());
  EXPECT_EQ(exp.name, "typed-demo");
  EXPECT_EQ(exp.description, "every section once");
  // The cell sections and the launcher, in file order; none of the sweep's own sections.
  std::vector<std::string> cell_keys;
  for (const auto& item : exp.cells) cell_keys.push_back(item.first.Scalar());
  EXPECT_EQ(cell_keys, (std::vector<std::string>{"model", "strategy", "data", "train", "eval", "checkpoint", "metrics",
                                                 "runtime", "tracking", "plugins", "launcher"}));
  EXPECT_EQ(where(exp.cells["launcher"]["ranks_per_node"]), "13:38");
  EXPECT_EQ(exp.plugin_paths, (std::vector<fs::path>{dir / "extra_plugins", "/abs/plugins"}));

  const experiment::SweepSections& s = exp.sweep;
  ASSERT_EQ(s.matrix.size(), 2u);
  EXPECT_EQ(s.matrix[0].axis.name, "strategy");
  EXPECT_EQ(s.matrix[0].axis.path, "strategy.name");
  EXPECT_EQ(s.matrix[0].texts, (std::vector<std::string>{"ring", "{name: ps, mode: async}"}));
  EXPECT_EQ(where(s.matrix[0].values[1]), "15:20");
  EXPECT_EQ(s.matrix[1].texts, (std::vector<std::string>{"1e-3", "2e-3"}));
  ASSERT_EQ(s.exclude.size(), 1u);
  ASSERT_EQ(s.exclude[0].wanted.size(), 2u);
  EXPECT_EQ(s.exclude[0].wanted[1].first, 1);
  EXPECT_EQ(s.exclude[0].wanted[1].second, std::vector<std::string>{"2e-3"});
  ASSERT_EQ(s.include.size(), 1u);
  EXPECT_EQ(s.include[0].values.at(1).first, "strategy.buckets");
  EXPECT_EQ(where(s.include[0].values.at(1).second), "20:39");
  EXPECT_EQ(s.seeds, (std::vector<std::optional<std::int64_t>>{7, 9}));
  EXPECT_TRUE(s.vary_seed);
  EXPECT_EQ(exp.report.baseline, "ring");
  EXPECT_EQ(exp.report.target_loss, 5.5);

  // Expanded from the types: 4 combinations less the excluded one, plus the included cell, twice each.
  config::Diagnostics diag(exp.file.string());
  const experiment::SweepMatrix matrix = experiment::expand_matrix(s, diag);
  EXPECT_TRUE(diag.empty());
  ASSERT_EQ(matrix.points.size(), 8u);
  const experiment::CellTree tree =
      experiment::cell_tree(exp, matrix, matrix.points[7], experiment::Positions::Dropped);
  EXPECT_EQ(tree.cell["strategy"]["name"].Scalar(), "dps");
  EXPECT_EQ(tree.cell["strategy"]["buckets"].Scalar(), "2");
  EXPECT_EQ(tree.cell["train"]["seed"].Scalar(), "9");
  EXPECT_FALSE(tree.cell["launcher"]);  // the launcher stays in the root, which `gradsweep train` never reads
  EXPECT_EQ(tree.root["launcher"]["nodes"].Scalar(), "1");
  EXPECT_EQ(experiment::describe_point(exp, matrix, matrix.points[0]), "strategy=ring train.lr=1e-3 seed=7");
}

TEST(ExperimentTyped, OverridesReachTheTypedFormAndCellsDoNotEditIt) {
  const experiment::ExperimentFile exp = read(test::scratch_dir(), kFull, {"train.steps=9", "name=renamed"});
  EXPECT_EQ(exp.name, "renamed");
  ASSERT_EQ(exp.sweep.matrix.size(), 2u);
  EXPECT_EQ(exp.cells["train"]["steps"].Scalar(), "9");
  config::Diagnostics diag(exp.file.string());
  const experiment::SweepMatrix matrix = experiment::expand_matrix(exp.sweep, diag);
  for (const auto positions : {experiment::Positions::Dropped, experiment::Positions::Kept}) {
    const experiment::CellTree tree = experiment::cell_tree(exp, matrix, matrix.points[0], positions);
    EXPECT_EQ(tree.cell["train"]["lr"].Scalar(), "1e-3");
  }
  // Setting the cells' values left the experiment's own tree as written.
  EXPECT_FALSE(exp.cells["train"]["lr"]);
  EXPECT_FALSE(exp.cells["train"]["seed"]);
  EXPECT_EQ(exp.cells["strategy"]["name"].Scalar(), "single");
}

TEST(ExperimentTyped, ACellTreeWithPositionsNamesWhereEachValueWasWritten) {
  const experiment::ExperimentFile exp = read(test::scratch_dir(), kFull);
  config::Diagnostics diag(exp.file.string());
  const experiment::SweepMatrix matrix = experiment::expand_matrix(exp.sweep, diag);
  const experiment::CellTree kept = experiment::cell_tree(exp, matrix, matrix.points[2], experiment::Positions::Kept);
  EXPECT_EQ(where(kept.cell["strategy"]), "15:20");            // from the matrix
  EXPECT_EQ(where(kept.cell["train"]["lr"]), "16:14");         // from the matrix
  EXPECT_EQ(where(kept.cell["train"]["batch_size"]), "6:31");  // from the base
}

// Problems found only when a cell is validated, long after the file was read, still name file:line:column.
TEST(ExperimentTyped, ProblemsFoundAfterReadingNameFileLineColumn) {
  const fs::path dir = test::scratch_dir();
  const auto p = test::plan_problems(dir, test::tiny_experiment("matrix:\n  train.steps: [4, many]\n"
                                                                "include:\n  - {strategy: single, ranks_per_node: 3}\n"
                                                                "  - {train.lr: -1}\n"));
  const std::string file = (dir / "exp.yaml").string();
  EXPECT_TRUE(test::has_problem(p, file + ":8:20: train.steps: expected an integer, got 'many'")) << p.front();
  EXPECT_TRUE(test::has_problem(p, file + ":10:40: launcher.ranks_per_node: strategy 'single' runs on one rank"))
      << p.front();
  EXPECT_TRUE(test::has_problem(p, file + ":11:16: train.lr:")) << p.front();
}

TEST(ExperimentTyped, KeysThatAreNoPathAreRefusedWhereWritten) {
  const fs::path dir = test::scratch_dir();
  const auto p = test::plan_problems(dir, test::tiny_experiment("matrix:\n  train..lr: [1]\n"
                                                                "include:\n  - {.seed: 3}\n"));
  const std::string file = (dir / "exp.yaml").string();
  EXPECT_TRUE(test::has_problem(p, file + ":8:3: matrix.train..lr: not a configuration key path"));
  EXPECT_TRUE(test::has_problem(p, file + ":10:6: include[0]..seed: not a configuration key path"));
}

TEST(CellConfigKeyPath, TheOneSetterCreatesReplacesAndRefuses) {
  YAML::Node root = YAML::Load("train: {lr: 1}\nmodel: gpt2\n");
  config::set_key_path(root, "train.seed", YAML::Node(3));
  config::set_key_path(root, "model.preset", YAML::Node("tiny"));  // a scalar on the way becomes a mapping
  config::set_key_path(root, "a.b.c", YAML::Node(true));
  EXPECT_EQ(root["train"]["lr"].Scalar(), "1");
  EXPECT_EQ(root["train"]["seed"].Scalar(), "3");
  EXPECT_EQ(root["model"]["preset"].Scalar(), "tiny");
  EXPECT_EQ(config::find_key_path(root, "a.b.c").Scalar(), "true");
  EXPECT_FALSE(config::find_key_path(root, "a.x.c"));
  EXPECT_FALSE(config::find_key_path(root, "train.lr.x"));
  EXPECT_FALSE(config::find_key_path(root, "a..b"));

  for (const std::string bad : {"", ".a", "a.", "a..b", "."}) {
    EXPECT_FALSE(config::is_key_path(bad)) << bad;
    EXPECT_THROW(config::set_key_path(root, bad, YAML::Node(1)), std::invalid_argument) << bad;
    EXPECT_THROW(config::split_key_path(bad), std::invalid_argument) << bad;
  }
  YAML::Node scalar = YAML::Load("3");
  EXPECT_THROW(config::set_key_path(scalar, "a", YAML::Node(1)), std::invalid_argument);
  YAML::Node list = YAML::Load("[1, 2]");
  EXPECT_THROW(config::set_key_path(list, "a", YAML::Node(1)), std::invalid_argument);
}

TEST(CellConfigKeyPath, SetOverridesGoThroughTheSameSetter) {
  YAML::Node root = YAML::Load("train: {lr: 1}\n");
  config::apply_override(root, "train.lr=[1, 2]");
  EXPECT_TRUE(root["train"]["lr"].IsSequence());
  for (const std::string bad : {"train..lr=1", ".lr=1", "lr.=1", "=1", "lr"}) {
    try {
      config::apply_override(root, bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "--set '" + bad + "': expected key.path=value");
    }
  }
}

}  // namespace
}  // namespace gradsweep
