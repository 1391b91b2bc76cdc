// The experiment file's options for comparisons, planned through the library as `gradsweep plan` does:
// repeat: {count: N, vary_seed: false}, and the report section, with their errors at file:line:column;
// and the order repeats run in.
#include "experiment_test_support.hpp"

#include "experiment/launch/run_order.hpp"

#include <gtest/gtest.h>

#include <set>

namespace gradsweep {
namespace {
using experiment::interleaved_order;

TEST(RunOrder, RoundRobinReversedEveryOtherRound) {
  std::vector<runs::PlannedCell> cells;
  for (const std::string name : {"A", "B", "C"})
    for (int r = 0; r < 3; ++r) {
      runs::PlannedCell c;
      c.id = name + std::to_string(r);
      c.repeat = r;
      cells.push_back(c);
    }
  std::string order;
  for (const auto& c : interleaved_order(cells)) order += c.id + " ";
  EXPECT_EQ(order, "A0 B0 C0 C1 B1 A1 A2 B2 C2 ");
  cells.resize(2);  // A0, A1: no other cell to interleave with
  EXPECT_EQ(interleaved_order(cells)[1].id, "A1");
}

TEST(RepeatOption, FixedSeedRepeatsAreDistinctCellsWithOneSeed) {
  const auto plan =
      test::plan_text(test::scratch_dir(),
                      test::tiny_experiment("matrix: {strategy: [single]}\nrepeat: {count: 3, vary_seed: false}\n"));
  ASSERT_EQ(plan.cells.size(), 3u);
  std::set<std::string> ids;
  for (const auto& c : plan.cells) ids.insert(c.id);
  EXPECT_EQ(ids.size(), 3u);
  // No seed axis, and every cell.yaml trains with the default seed.
  EXPECT_EQ(plan.axes, std::vector<std::string>{"strategy"});
  for (const auto& yaml : plan.cell_yaml) EXPECT_NE(yaml.find("seed: 1234"), std::string::npos) << yaml;
  EXPECT_EQ(plan.cells[2].repeat, 2);
  // repeat: N still varies the seed.
  const auto varied = test::plan_text(test::scratch_dir("varied"), test::tiny_experiment("repeat: {count: 2}\n"));
  ASSERT_EQ(varied.cells.size(), 2u);
  EXPECT_NE(varied.cell_yaml[1].find("seed: 1235"), std::string::npos);
}

TEST(RepeatOption, BadValuesNameTheKeyAndLine) {
  const auto dir = test::scratch_dir();
  // The tiny base is 6 lines: the repeat line is line 7.
  auto problems = test::plan_problems(dir, test::tiny_experiment("repeat: {count: 0, vary_seed: maybe, seeds: [1]}\n"));
  EXPECT_TRUE(test::has_problem(problems, "exp.yaml:7:17: repeat.count: expected a positive integer, got '0'"))
      << ::testing::PrintToString(problems);
  EXPECT_TRUE(test::has_problem(problems, "repeat.vary_seed: expected true or false, got 'maybe'"));
  EXPECT_TRUE(test::has_problem(problems, "repeat.seeds: unknown key"));
  problems = test::plan_problems(dir, test::tiny_experiment("report: {baseline: ring, target_loss: -1, x: 1}\n"));
  EXPECT_TRUE(test::has_problem(problems, "exp.yaml:7:"));
  EXPECT_TRUE(test::has_problem(problems, "report.target_loss: expected a positive number"));
  EXPECT_TRUE(test::has_problem(problems, "report.x: unknown key"));
  EXPECT_TRUE(
      test::plan_problems(dir, test::tiny_experiment("report: {baseline: single, target_loss: 2.5}\n")).empty());
}

}  // namespace
}  // namespace gradsweep
