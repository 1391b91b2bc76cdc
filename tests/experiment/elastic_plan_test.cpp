// launcher.elastic without running anything: what a failure says about the nodes it lost, the cell that goes
// on, how a cell that changed size is marked, and the planner's answers to elastic settings that cannot work.
// The runs themselves: tests/cluster/elastic_cell_test.cpp (emulated cluster) and
// tests/experiment/slurm_multinode_test.cpp (Slurm's requeue onto fewer nodes).
#include "runs/cell_status.hpp"
#include "experiment/launch/elastic_cell.hpp"

#include "experiment/experiment_test_support.hpp"

#include <gtest/gtest.h>

namespace gradsweep {
namespace {
using namespace experiment;

TEST(ElasticCell, TheFailureAndTheLinksNameTheLostNodes) {
  EXPECT_EQ(culprit_ranks("killed: rank 3 signal 9"), std::vector<int>{3});
  EXPECT_EQ(culprit_ranks("hang: ranks 1,5 did not finish allreduce #12"), (std::vector<int>{1, 5}));
  EXPECT_EQ(culprit_ranks("hang: rank 2 did not finish allreduce #12"), std::vector<int>{2});
  EXPECT_TRUE(culprit_ranks("hang: every rank waits in allreduce #12").empty());
  EXPECT_TRUE(culprit_ranks("error").empty());
  // 2 ranks per node: ranks 1 and 5 are on nodes 0 and 2.
  EXPECT_EQ(lost_nodes("hang: ranks 1,5 did not finish allreduce #12", 4, 2, {}), (std::vector<int>{0, 2}));
  EXPECT_EQ(lost_nodes("hang: ranks 1,3 did not finish allreduce #12", 4, 1, {3}), std::vector<int>{3})
      << "rank 1's node is reachable: it answered the flight recorder late, it is not lost";
  EXPECT_EQ(lost_nodes("killed: rank 3 signal 9", 4, 1, {3}), std::vector<int>{3});
  EXPECT_EQ(lost_nodes("killed: rank 1 signal 9", 4, 1, {3}), (std::vector<int>{1, 3})) << "a killed rank is a fact";
  EXPECT_TRUE(lost_nodes("killed: rank 9 signal 9", 4, 1, {}).empty()) << "a rank outside the cell is no node of it";
}

TEST(ElasticCell, GoesOnWithTheNodesLeftDownToItsMinimum) {
  runs::PlannedCell cell;
  cell.nodes = 4;
  cell.ranks_per_node = 2;
  EXPECT_FALSE(shrunk_cell(cell, {3})) << "not elastic: a lost node fails the cell";
  cell.elastic_min_nodes = 2;
  const auto three = shrunk_cell(cell, {3});
  ASSERT_TRUE(three);
  EXPECT_EQ(three->nodes, 3);
  EXPECT_EQ(three->world_size(), 6);
  EXPECT_FALSE(shrunk_cell(cell, {})) << "a failure that lost no node is not a reason to go on";
  EXPECT_TRUE(shrunk_cell(*three, {0}));
  EXPECT_FALSE(shrunk_cell(*three, {0, 1})) << "1 node left is below min_nodes 2";
}

TEST(ElasticCell, AResizedCellIsMarkedByItsStatusOrItsSummary) {
  runs::PlannedCell cell;
  cell.nodes = 4;
  runs::CellStatus status;
  const nlohmann::json same{{"world_size", 4}};
  EXPECT_EQ(runs::resized_text(cell, status, same), "");
  status.resizes = {{4, 3, {3}, "killed: rank 3 signal 9", "t"}, {3, 2, {0}, "link down on node 0", "t"}};
  EXPECT_EQ(runs::resized_text(cell, status, same), "4->3->2 nodes");
  status.resizes.clear();
  // Slurm's requeue: the summary says the run resumed at another size, or ran at one.
  EXPECT_EQ(runs::resized_text(cell, status, {{"world_size", 3}, {"resharded", {{"from_world_size", 4}}}}),
            "4->3 ranks");
  EXPECT_EQ(runs::resized_text(cell, status, {{"world_size", 3}}), "4->3 ranks");
}

TEST(ElasticCell, SettingsThatCannotWorkAreRefusedWhereTheyAreWritten) {
  const std::string kRing = "matrix: {strategy: [ring]}\n";  // tiny_experiment's `single` takes one rank
  const auto too_many = test::plan_problems(
      test::scratch_dir(), test::tiny_experiment("launcher: {nodes: 2, elastic: {min_nodes: 3}}\n" + kRing));
  ASSERT_EQ(too_many.size(), 1u);
  EXPECT_NE(too_many[0].find("exp.yaml:7:"), std::string::npos) << too_many[0];
  EXPECT_NE(too_many[0].find("launcher.elastic.min_nodes: 3 is not between 1 and the cell's 2 node(s)"),
            std::string::npos)
      << too_many[0];
  // batch_size 4 splits over 4 and 2 ranks, not over 3.
  const auto batch = test::plan_problems(
      test::scratch_dir(), test::tiny_experiment("launcher: {nodes: 4, elastic: {min_nodes: 2}}\n" + kRing));
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_NE(batch[0].find("launcher.elastic.min_nodes: lets the cell go on with 3 node(s)"), std::string::npos)
      << batch[0];
  const auto unknown = test::plan_problems(
      test::scratch_dir(), test::tiny_experiment("launcher: {nodes: 2, elastic: {min_node: 1}}\n" + kRing));
  ASSERT_FALSE(unknown.empty());
  EXPECT_NE(unknown[0].find("min_node"), std::string::npos) << unknown[0];
  EXPECT_TRUE(test::plan_problems(test::scratch_dir(),
                                  test::tiny_experiment("launcher: {nodes: 2, elastic: {min_nodes: 1}}\n" + kRing))
                  .empty());
}

}  // namespace
}  // namespace gradsweep
