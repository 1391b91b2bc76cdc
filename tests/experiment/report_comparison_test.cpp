// End to end through the real CLI: a two-configuration sweep with `repeat: 3` trained for real (tiny
// GPT-2, one rank), run interleaved, whose report compares the two with intervals and verdicts, whose
// results.csv has the comparison columns, and whose `report --baseline` refuses a group not in the sweep.
#include "experiment_test_support.hpp"

#include "experiment/plan/sweep_plan.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

namespace gradsweep {
namespace {
namespace fs = std::filesystem;

const char* kRootEnv = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ";

TEST(ReportComparison, RepeatedSweepGetsVerdictsAndColumns) {
  const fs::path dir = test::scratch_dir();
  test::write_text(dir / "rep.yaml", test::tiny_experiment("name: rep\nlauncher: {threads: 1}\n"
                                                           "matrix: {train.lr: [1e-3, 3e-3]}\nrepeat: 3\n"
                                                           "report: {baseline: 1e-3}\n",
                                                           6));
  const auto run = test::run_command(std::string(kRootEnv) + "timeout -k 5 300 " +
                                     test::gradsweep("run " + (dir / "rep.yaml").string() + " --out " +
                                                     (dir / "out").string() + " --set eval.every=2"));
  ASSERT_EQ(run.exit_code, 0) << run.output;

  // Interleaved: A0 B0 B1 A1 A2 B2, by the time each cell's summary was written.
  const auto plan = runs::read_plan(dir / "out");
  ASSERT_EQ(plan.cells.size(), 6u);
  std::vector<std::pair<fs::file_time_type, std::string>> finished;
  for (const auto& c : plan.cells)
    finished.emplace_back(fs::last_write_time(c.dir / "summary.json"),
                          c.axes[0].second + "/" + std::to_string(c.repeat));
  std::sort(finished.begin(), finished.end());
  std::string order;
  for (const auto& f : finished) order += f.second + " ";
  EXPECT_EQ(order, "1e-3/0 3e-3/0 3e-3/1 1e-3/1 1e-3/2 3e-3/2 ");

  const std::string md = test::read_text(dir / "out" / "report.md");
  EXPECT_NE(md.find("## Comparison with the baseline"), std::string::npos) << md;
  EXPECT_NE(md.find("Baseline: **lr=1e-3** (report.baseline)"), std::string::npos) << md;
  EXPECT_NE(md.find("| lr=3e-3 | 3 | "), std::string::npos) << md;
  const bool verdict = md.find("| faster |") != std::string::npos || md.find("| slower |") != std::string::npos ||
                       md.find("| not resolved |") != std::string::npos;
  EXPECT_TRUE(verdict) << md;
  EXPECT_NE(md.find("## Time to target"), std::string::npos) << md;

  const std::string csv = test::read_text(dir / "out" / "results.csv");
  const std::string header = csv.substr(0, csv.find('\n'));
  for (const char* column :
       {",group,", ",round,", ",group.tokens_per_sec.ci95_low,", ",group.verdict", ",time_to_target_s,"})
    EXPECT_NE(header.find(column), std::string::npos) << column << " in " << header;

  // Each cell's provenance has the machine's load over its run.
  std::ifstream prov(plan.cells[0].dir / "provenance.json");
  const auto j = nlohmann::json::parse(prov);
  EXPECT_TRUE(j["load"].contains("loadavg_start")) << j.dump();
  EXPECT_TRUE(j["load"].contains("other_cores")) << j.dump();

  // A baseline not in the sweep: exit 2, the message names it and the groups, results.csv untouched.
  const auto bad = test::run_command(test::gradsweep("report " + (dir / "out").string() + " --baseline dps"));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("--baseline 'dps' is not in the sweep"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("'lr=3e-3'"), std::string::npos) << bad.output;
  EXPECT_EQ(test::read_text(dir / "out" / "results.csv"), csv);
  const auto good = test::run_command(test::gradsweep("report " + (dir / "out").string() + " --baseline lr=3e-3"));
  EXPECT_EQ(good.exit_code, 0) << good.output;
  EXPECT_NE(good.output.find("Baseline: **lr=3e-3** (--baseline)"), std::string::npos) << good.output;
}

}  // namespace
}  // namespace gradsweep
