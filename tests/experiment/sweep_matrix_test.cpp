// Matrix expansion, exclude / include / repeat, and cell ids that depend only on the resolved configuration.
#include "experiment_test_support.hpp"

#include "experiment/plan/cell_id.hpp"
#include "experiment/plan/sweep_matrix.hpp"

#include <gtest/gtest.h>

#include <set>

namespace gradsweep {
namespace {

using runs::SweepPlan;

std::vector<std::string> axis_rows(const runs::SweepPlan& plan) {
  std::vector<std::string> rows;
  for (const auto& c : plan.cells) {
    std::string row;
    for (const auto& [k, v] : c.axes) row += (row.empty() ? "" : " ") + k + "=" + v;
    rows.push_back(row);
  }
  return rows;
}

TEST(SweepMatrix, EveryCombinationLastAxisFastest) {
  const auto plan = test::plan_text(
      test::scratch_dir(),
      test::tiny_experiment("matrix:\n  strategy: [ring, dps]\n  nodes: [1, 2]\n  train.micro_batch: [1, 2]\n"));
  EXPECT_EQ(plan.axes, (std::vector<std::string>{"strategy", "nodes", "train.micro_batch"}));
  const auto rows = axis_rows(plan);
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[0], "strategy=ring nodes=1 train.micro_batch=1");
  EXPECT_EQ(rows[1], "strategy=ring nodes=1 train.micro_batch=2");
  EXPECT_EQ(rows[2], "strategy=ring nodes=2 train.micro_batch=1");
  EXPECT_EQ(rows[7], "strategy=dps nodes=2 train.micro_batch=2");
  EXPECT_EQ(plan.cells[2].nodes, 2);
  EXPECT_EQ(plan.cells[2].world_size(), 2);
  std::set<std::string> ids;
  for (const auto& c : plan.cells) ids.insert(c.id);
  EXPECT_EQ(ids.size(), 8u);
}

TEST(SweepMatrix, ExcludeDropsMatchingCombinationsIncludeAddsCells) {
  const auto plan = test::plan_text(
      test::scratch_dir(),
      test::tiny_experiment(
          "matrix:\n  strategy: [single, ring, dps]\n  ranks_per_node: [1, 2, 4]\n"
          "exclude:\n  - {strategy: single, ranks_per_node: [2, 4]}\n  - {strategy: [ring, dps], ranks_per_node: 1}\n"
          "include:\n  - {strategy: ps, ranks_per_node: 2, strategy.mode: async}\n"));
  const auto rows = axis_rows(plan);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0], "strategy=single ranks_per_node=1 strategy.mode=");
  EXPECT_EQ(rows[1], "strategy=ring ranks_per_node=2 strategy.mode=");
  EXPECT_EQ(rows[4], "strategy=dps ranks_per_node=4 strategy.mode=");
  EXPECT_EQ(rows[5], "strategy=ps ranks_per_node=2 strategy.mode=async");
}

TEST(SweepMatrix, PluginSectionsGivenAsMappingsAreLabelledWithTheirOptions) {
  // Two cells of one strategy with different options must not read alike in the plan and results.
  const auto plan = test::plan_text(
      test::scratch_dir(),
      test::tiny_experiment(
          "matrix:\n  strategy: [ring, {name: ps, mode: async}, {name: ps, mode: sync, server_computes: false}]\n"
          "  ranks_per_node: [2]\n"));
  const auto rows = axis_rows(plan);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0], "strategy=ring ranks_per_node=2");
  EXPECT_EQ(rows[1], "strategy=ps(mode=async) ranks_per_node=2");
  EXPECT_EQ(rows[2], "strategy=ps(mode=sync,server_computes=false) ranks_per_node=2");
}

TEST(SweepMatrix, RepeatRunsEachCellWithSuccessiveOrGivenSeeds) {
  const auto dir = test::scratch_dir();
  const auto plan = test::plan_text(dir, test::tiny_experiment("matrix: {strategy: [single]}\nrepeat: 3\n"));
  ASSERT_EQ(plan.cells.size(), 3u);
  EXPECT_EQ(axis_rows(plan)[0], "strategy=single seed=1234");
  EXPECT_EQ(axis_rows(plan)[2], "strategy=single seed=1236");
  const auto seeds = test::plan_text(dir, test::tiny_experiment("repeat: {seeds: [7, 9]}\n"), {}, "seeds.yaml");
  ASSERT_EQ(seeds.cells.size(), 2u);
  EXPECT_EQ(axis_rows(seeds)[1], "seed=9");
  EXPECT_EQ(seeds.cells[1].repeat, 1);
}

TEST(SweepMatrix, NoMatrixIsOneCell) {
  const auto plan = test::plan_text(test::scratch_dir(), test::tiny_experiment(""));
  ASSERT_EQ(plan.cells.size(), 1u);
  EXPECT_EQ(plan.cells[0].world_size(), 1);
  EXPECT_EQ(plan.cells[0].config_hash.size(), 16u);
  EXPECT_EQ(plan.cells[0].id, plan.cells[0].config_hash.substr(0, 12));
  EXPECT_EQ(plan.cells[0].dir.filename().string(), plan.cells[0].id);
}

TEST(SweepMatrix, IdsAreStableAcrossRunsKeyOrderAndNumberSpelling) {
  const auto dir = test::scratch_dir();
  const std::string extra = "matrix: {strategy: [ring, dps], nodes: [2]}\n";
  const auto a = test::plan_text(dir, test::tiny_experiment(extra), {}, "a.yaml");
  const auto again = test::plan_text(dir, test::tiny_experiment(extra), {}, "a.yaml");
  // Same keys in another order, and the learning rate spelled differently.
  std::string reordered = test::tiny_experiment(extra);
  const auto model_line = reordered.substr(0, reordered.find('\n') + 1);
  reordered = reordered.substr(model_line.size()) + model_line;
  reordered.replace(reordered.find("lr: 1e-3"), 8, "lr: 0.001");
  const auto b = test::plan_text(dir, reordered, {}, "b.yaml");
  ASSERT_EQ(a.cells.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(a.cells[i].id, again.cells[i].id);
    EXPECT_EQ(a.cells[i].id, b.cells[i].id);
  }
  // Writing a default explicitly does not change the id; changing a value does.
  const auto explicit_default =
      test::plan_text(dir, test::tiny_experiment(extra + "checkpoint: {every: 0}\n"), {}, "c.yaml");
  EXPECT_EQ(explicit_default.cells[0].id, a.cells[0].id);
  const auto other = test::plan_text(dir, test::tiny_experiment(extra), {"train.lr=2e-3"}, "a.yaml");
  EXPECT_NE(other.cells[0].id, a.cells[0].id);
}

TEST(SweepMatrix, SetOverridesAnyKeyIncludingTheMatrix) {
  const auto plan =
      test::plan_text(test::scratch_dir(), test::tiny_experiment("matrix: {strategy: [ring, dps], nodes: [2]}\n"),
                      {"matrix.nodes=[1, 2, 4]", "train.steps=7"});
  ASSERT_EQ(plan.cells.size(), 6u);
  EXPECT_EQ(plan.cells[0].steps, 7);
  EXPECT_EQ(plan.cells[5].world_size(), 4);
}

TEST(SweepMatrix, ResolvedCellYamlHasAbsolutePathsAndPluginDefaults) {
  const auto plan = test::plan_text(
      test::scratch_dir(), test::tiny_experiment("matrix: {strategy: [ring]}\nlauncher: {ranks_per_node: 2}\n"));
  const std::string& yaml = plan.cell_yaml.at(0);
  const YAML::Node node = YAML::Load(yaml);
  EXPECT_EQ(node["strategy"]["name"].as<std::string>(), "ring");
  EXPECT_TRUE(node["strategy"].size() > 1) << yaml;  // the ring plugin's options, defaults filled in
  EXPECT_TRUE(std::filesystem::path(node["data"]["train"].as<std::string>()).is_absolute());
  EXPECT_FALSE(node["launcher"]) << "a cell configuration has no launcher section";
  EXPECT_EQ(experiment::axis_path("nodes"), "launcher.nodes");
  EXPECT_EQ(experiment::axis_path("precision"), "strategy.precision");
}

TEST(SweepMatrix, CanonicalJsonSortsKeys) {
  const auto a = experiment::canonical_json(YAML::Load("{b: 1, a: {d: x, c: [1, 2]}}"));
  const auto b = experiment::canonical_json(YAML::Load("{a: {c: [1, 2], d: x}, b: 1}"));
  EXPECT_EQ(experiment::config_hash(a), experiment::config_hash(b));
  EXPECT_EQ(a.dump(), R"({"a":{"c":["1","2"],"d":"x"},"b":"1"})");
}

}  // namespace
}  // namespace gradsweep
