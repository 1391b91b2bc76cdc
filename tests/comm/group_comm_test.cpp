// Sub-communicators (sdk::Communicator::split and ::group) of the MPI backend in real processes:
// collective_check's group sections on 4 ranks faking 2 nodes of 2 (GRADSWEEP_RANKS_PER_NODE=2), and a hang
// inside a group, which the group's watchdog must end naming the group, the rank, the collective and its
// number.
#include "support/test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <regex>

namespace gradsweep {
namespace {

namespace fs = std::filesystem;

std::string mpirun_on_two_nodes(const std::string& args, const std::string& env = "") {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 GRADSWEEP_RANKS_PER_NODE=2 " + env +
         " timeout -k 5 90 mpirun --oversubscribe --bind-to none -np 4 -x GRADSWEEP_RANKS_PER_NODE " +
         "-x GRADSWEEP_COMM_TIMEOUT -x GRADSWEEP_CHECK_COLLECTIVES " + GRADSWEEP_COLLECTIVE_CHECK + " " + args;
}

TEST(MpiGroups, SplitNodeAndAcrossNodesSumCountAndRefuse) {
  const auto r = test::run_command(mpirun_on_two_nodes("groups"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("FAIL"), std::string::npos) << r.output;
  for (int rank = 0; rank < 4; ++rank) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(
        r.output, m, std::regex("DONE rank " + std::to_string(rank) + " of 4 groups checks=([0-9]+) failures=0")))
        << r.output;
    EXPECT_GT(std::stoi(m[1]), 50);
  }
}

TEST(MpiGroups, AHangInsideAGroupIsNamedByGroupRankAndCollective) {
  const fs::path dir = test::scratch_dir();
  const auto r = test::run_command(
      mpirun_on_two_nodes("group-hang 3 " + dir.string(), "GRADSWEEP_COMM_TIMEOUT=2 GRADSWEEP_CHECK_COLLECTIVES=0"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  // Rank 3 of the job is rank 1 of split(1) = {1, 3}; its partner waits in the group's collective #2.
  EXPECT_NE(r.output.find("on rank 0 of 2 in group split(1) has waited"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("hang: in group split(1) (job ranks 1,3): rank 1 did not finish allreduce #2"),
            std::string::npos)
      << r.output;
  const fs::path dumps = dir / "flight-recorder";
  EXPECT_TRUE(fs::exists(dumps / "group-split1-at1-rank-0.json")) << r.output;
  EXPECT_TRUE(fs::exists(dumps / "group-split1-at1-rank-1.json")) << r.output;
  const auto verdict = nlohmann::json::parse(test::read_text(dumps / "verdict.json"));
  EXPECT_EQ(verdict["summary"], "in group split(1) (job ranks 1,3): rank 1 did not finish allreduce #2");
}

}  // namespace
}  // namespace gradsweep
