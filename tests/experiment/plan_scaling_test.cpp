// Planning stays linear in the cells: each cell is built once and `plan` emits no cell YAML. Counted
// rather than timed (the machine is shared), on a matrix big enough for a per-cell re-parse or a second
// pass over the cells to show in the counts.
#include "experiment_test_support.hpp"

#include "experiment/plan/experiment_file.hpp"

#include <gtest/gtest.h>

namespace gradsweep {
namespace {

// train.lr (25) x train.seed (10) x strategy (4): 1000 cells, no two alike. `sampled` draws fewer negatives
// than the tiny model's 257 words: its plan check refuses the default 1024.
std::string wide_matrix() {
  std::string lrs;
  for (int i = 1; i <= 25; ++i) lrs += (lrs.empty() ? "" : ", ") + std::to_string(i) + "e-4";
  return test::tiny_experiment("matrix:\n  train.lr: [" + lrs +
                               "]\n  train.seed: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"
                               "  strategy: [single, ring, dps, {name: sampled, negatives: 64}]\n");
}

runs::SweepPlan plan_wide(experiment::CellFiles files) {
  const auto dir = test::scratch_dir();
  test::write_text(dir / "wide.yaml", wide_matrix());
  const auto exp = experiment::load_experiment_file(dir / "wide.yaml", {});
  plugins::PluginRegistry registry;
  registry.scan({test::plugin_dir()});
  return experiment::plan_sweep(exp, dir / "out", registry, test::gradsweep_binary(), experiment::kDefaultMaxCells,
                                files);
}

TEST(PlanScaling, EachCellBuiltOnceAndPlanEmitsNoYaml) {
  const auto plan = plan_wide(experiment::CellFiles::Skip);
  ASSERT_EQ(plan.cells.size(), 1000u);
  EXPECT_EQ(plan.duplicates, 0);
  EXPECT_EQ(plan.cell_builds, 1000u);  // no cell built again from the file
  EXPECT_EQ(plan.yaml_emits, 0u);
  EXPECT_TRUE(plan.cell_yaml.empty());
  EXPECT_EQ(plan.cells[999].axes.at(2).second, "sampled(negatives=64)");
}

TEST(PlanScaling, RunEmitsEachCellsYamlOnceWithTheSameIds) {
  const auto listed = plan_wide(experiment::CellFiles::Skip);
  const auto made = plan_wide(experiment::CellFiles::Make);
  ASSERT_EQ(made.cells.size(), 1000u);
  EXPECT_EQ(made.cell_builds, 1000u);
  EXPECT_EQ(made.yaml_emits, 1000u);
  ASSERT_EQ(made.cell_yaml.size(), 1000u);
  for (std::size_t i = 0; i < made.cells.size(); i += 199) {
    EXPECT_EQ(made.cells[i].id, listed.cells[i].id);
    EXPECT_EQ(made.cell_yaml[i].rfind("# cell " + made.cells[i].id, 0), 0u) << made.cell_yaml[i];
  }
}

// write_plan needs the texts: a plan made for listing only is refused rather than written without them.
TEST(PlanScaling, WritePlanRefusesAPlanWithoutCellYaml) {
  const auto plan = plan_wide(experiment::CellFiles::Skip);
  EXPECT_THROW(runs::write_plan(plan, "name: wide\n"), std::logic_error);
}

}  // namespace
}  // namespace gradsweep
