// The report's comparison over cells written to disk as a finished sweep leaves them (status.json,
// summary.json, metrics.jsonl), with known numbers: groups, paired ratios and verdicts, time-to-target,
// the results.csv columns, and the messages for a bad baseline, a one-run group, an unreached target and a
// group of another model than the baseline's.
#include "runs/cell_status.hpp"
#include "analysis/comparison.hpp"
#include "analysis/comparison_table.hpp"
#include "analysis/report.hpp"

#include "support/test_files.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace gradsweep {
namespace {
namespace fs = std::filesystem;
using namespace analysis;

// A finished cell: tokens/s `speed`, evaluations at steps 9 and 19 with val losses 4 and `final_loss`,
// steps of 1 s and 100 bytes, 64 tokens a step.
// `model`, when given, is an axis of the cell.
void add_cell(runs::SweepPlan& plan, const std::string& strategy, int round, double speed, double final_loss,
              const std::string& model = "") {
  runs::PlannedCell cell;
  cell.id = model + strategy + std::to_string(round);
  cell.config_hash = "hash-" + cell.id;
  cell.dir = plan.out_dir / "cells" / cell.id;
  cell.axes = {{"strategy", strategy}, {"seed", std::to_string(100 + round)}};
  if (!model.empty()) cell.axes.insert(cell.axes.begin(), {"model", model});
  cell.repeat = round;
  fs::create_directories(cell.dir);
  std::string metrics;
  for (int step = 0; step < 20; ++step) {
    nlohmann::json j{{"step", step}, {"loss", 5.0}, {"time_s", {{"step", 1.0}}}, {"bytes_sent", 100}};
    if (step == 9) j["val_loss"] = 4.0;
    if (step == 19) j["val_loss"] = final_loss;
    metrics += j.dump() + "\n";
  }
  test::write_text(cell.dir / "metrics.jsonl", metrics);
  const nlohmann::json summary{{"status", "ok"},          {"strategy", strategy},      {"model", "gpt2"},
                               {"tokens_per_sec", speed}, {"step_time_s", 64 / speed}, {"val_loss", final_loss},
                               {"tokens_per_step", 64}};
  test::write_text(cell.dir / "summary.json", summary.dump());
  runs::CellStatus status;
  status.state = runs::CellState::Ok;
  status.config_hash = cell.config_hash;
  runs::write_cell_status(cell.dir, status);
  plan.cells.push_back(cell);
}

runs::SweepPlan sweep(const fs::path& dir) {
  runs::SweepPlan plan;
  plan.name = "synthetic";
  plan.out_dir = dir;
  plan.axes = {"strategy", "seed"};
  // Rounds drift together (1000, 900, 1100): ring is 20% faster in each, fast is equal to single.
  const double drift[] = {1000, 900, 1100};
  for (int r = 0; r < 3; ++r) add_cell(plan, "single", r, drift[r], 3.0);
  for (int r = 0; r < 3; ++r) add_cell(plan, "ring", r, 1.2 * drift[r], 3.2);
  for (int r = 0; r < 3; ++r) add_cell(plan, "same", r, drift[r] * (r == 1 ? 1.03 : 0.98), 2.0);
  add_cell(plan, "lonely", 0, 1500, 3.5);
  return plan;
}

TEST(Comparison, GroupsPairsAndVerdicts) {
  const runs::SweepPlan plan = sweep(test::scratch_dir());
  runs::ReportOptions options;
  options.baseline = "single";
  const Comparison c = compare_cells(plan, options, "--baseline", "--target-loss");
  ASSERT_EQ(c.groups.size(), 4u);
  EXPECT_EQ(c.groups[1].label, "strategy=ring");  // the seed is what repeats, not what is compared
  EXPECT_EQ(c.groups[0].finished, 3);
  EXPECT_DOUBLE_EQ(c.groups[0].tokens_per_sec.median, 1000);
  // Pairing cancels the drift: every round's ratio is 1.2 exactly.
  EXPECT_NEAR(c.groups[1].speed.ratio, 1.2, 1e-12);
  EXPECT_EQ(speed_verdict(c, 1), "faster");
  EXPECT_EQ(speed_verdict(c, 2), "not resolved");
  EXPECT_EQ(speed_verdict(c, 0), "baseline");
  EXPECT_EQ(speed_verdict(c, 3), "one round: no interval");
  EXPECT_FALSE(c.groups[3].tokens_per_sec.has_interval);
  // Target: single's final val loss, 3.0, reached at step 19 by single: 20 s, 1280 tokens, 2000 bytes.
  EXPECT_DOUBLE_EQ(c.target_loss, 3.0);
  EXPECT_DOUBLE_EQ(c.cells[0].to_target->seconds, 20);
  EXPECT_DOUBLE_EQ(c.cells[0].to_target->tokens, 1280);
  EXPECT_DOUBLE_EQ(c.cells[0].to_target->bytes, 2000);
  EXPECT_FALSE(c.cells[3].to_target);  // ring ends at 3.2
  // same: from 4.0 at step 9 (10 s) to 2.0 at step 19 (20 s), 3.0 is halfway: 15 s.
  EXPECT_DOUBLE_EQ(c.groups[2].to_target_s.median, 15);
}

TEST(Comparison, ReportTablesAndColumns) {
  const runs::SweepPlan plan = sweep(test::scratch_dir());
  runs::ReportOptions options;
  options.baseline = "strategy=single";
  const Report report = write_report(plan, {}, options);
  const std::string md = test::read_text(plan.out_dir / "report.md");
  EXPECT_NE(md.find("| strategy=ring | 3 | 1200 [9"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1.2 [1.2, 1.2] | faster |"), std::string::npos) << md;
  // A one-run value has no brackets, and the table says why once.
  EXPECT_NE(md.find("| strategy=lonely | 1 | 1500 | 0.04267 | 3.5 | 1.5 | one round: no interval |"), std::string::npos)
      << md;
  EXPECT_EQ(md.find("(one run, no interval)"), std::string::npos) << md;
  EXPECT_NE(md.find("A value without an interval in brackets comes from a single run"), std::string::npos) << md;
  EXPECT_NE(md.find("more tokens/s than the baseline, but misses the target"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1 | strategy=same | 3 of 3 | 15 [15, 15]"), std::string::npos) << md;
  const std::string csv = test::read_text(plan.out_dir / "results.csv");
  const std::string header = csv.substr(0, csv.find('\n')) + ",";
  for (const char* column :
       {"group", "round", "speed_vs_baseline", "time_to_target_s", "tokens_to_target", "bytes_to_target", "target_loss",
        "group.n", "group.tokens_per_sec.median", "group.tokens_per_sec.ci95_low", "group.val_loss.ci95_high",
        "group.verdict", "group.speed_vs_baseline.ci95_low"})
    EXPECT_NE(header.find(std::string(",") + column + ","), std::string::npos) << column;
  EXPECT_NE(csv.find("not reached"), std::string::npos);
}

// An elastic cell that lost a node mixes two cluster sizes: never pooled with the cells that kept theirs.
TEST(Comparison, AResizedCellIsAGroupOfItsOwnAndMarkedInTheResults) {
  const runs::SweepPlan plan = sweep(test::scratch_dir());
  runs::CellStatus status = runs::read_cell_status(plan.cells[4].dir);  // ring, round 1
  status.resizes = {{4, 3, {3}, "killed: rank 3 signal 9", "2026-01-01T00:00:00Z"}};
  runs::write_cell_status(plan.cells[4].dir, status);
  runs::ReportOptions options;
  options.baseline = "single";
  const Comparison c = compare_cells(plan, options, "--baseline", "--target-loss");
  ASSERT_EQ(c.groups.size(), 5u);
  EXPECT_EQ(c.groups[1].label, "strategy=ring");
  EXPECT_EQ(c.groups[1].finished, 2) << "the resized round left the ring group";
  const CellGroup& resized = c.groups[static_cast<std::size_t>(c.cells[4].group)];
  EXPECT_EQ(resized.label, "strategy=ring resized=4->3 nodes");
  EXPECT_EQ(resized.cells, std::vector<int>{4});
  write_report(plan, {}, options);
  const std::string csv = test::read_text(plan.out_dir / "results.csv");
  EXPECT_NE(csv.find(",ok,,4->3 nodes,"), std::string::npos) << csv;
  EXPECT_NE(csv.substr(0, csv.find('\n')).find(",status,failure,resized,reason,"), std::string::npos) << csv;
}

// The report names the cells with a straggler: a slow rank, or the node whose link the probe found slow.
TEST(Comparison, TheReportNamesTheCellsWithAStragglerAndWho) {
  const runs::SweepPlan plan = sweep(test::scratch_dir());
  const auto with_breakdown = [&](int cell, const nlohmann::json& breakdown) {
    nlohmann::json s = nlohmann::json::parse(test::read_text(plan.cells[cell].dir / "summary.json"));
    s["step_breakdown"] = breakdown;
    test::write_text(plan.cells[cell].dir / "summary.json", s.dump());
  };
  with_breakdown(0, {{"straggler_index", 1.05}, {"slowest_rank", 1}, {"link_straggler_index", 1.1}});
  with_breakdown(3, {{"straggler_index", 1.02},
                     {"slowest_rank", 0},
                     {"link_straggler_index", 350.0},
                     {"slow_link_rank", 3},
                     {"slow_link_host", "gsc-nf-n3"}});
  with_breakdown(6, {{"straggler_index", 1.9}, {"slowest_rank", 2}, {"link_straggler_index", nullptr}});
  write_report(plan);
  const std::string md = test::read_text(plan.out_dir / "report.md");
  EXPECT_NE(md.find("## Stragglers"), std::string::npos) << md;
  EXPECT_NE(md.find("| " + plan.cells[3].id + " | strategy=ring |  | 350 (rank 3) | gsc-nf-n3 |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| " + plan.cells[6].id + " | strategy=same | 1.9 (rank 2) |  |  |"), std::string::npos) << md;
  const std::string section = md.substr(md.find("## Stragglers"));
  EXPECT_EQ(section.find("| " + plan.cells[0].id + " |"), std::string::npos) << "an even cell has no straggler";
}

TEST(Comparison, BadBaselineWritesNothing) {
  const runs::SweepPlan plan = sweep(test::scratch_dir());
  runs::ReportOptions options;
  options.baseline = "dps";
  try {
    write_report(plan, {}, options);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--baseline 'dps' is not in the sweep"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'strategy=ring'"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(plan.out_dir / "results.csv"));
  EXPECT_FALSE(fs::exists(plan.out_dir / "report.md"));
}

TEST(Comparison, UnreachedTargetIsSaid) {
  const runs::SweepPlan plan = sweep(test::scratch_dir());
  runs::ReportOptions options;
  options.target_loss = 1.0;
  const Report report = write_report(plan, {}, options);
  ASSERT_EQ(report.warnings.size(), 1u);
  EXPECT_NE(report.warnings[0].find("no cell reached the target val loss 1 (--target-loss)"), std::string::npos);
  EXPECT_NE(test::read_text(plan.out_dir / "report.md").find("No cell reached the target val loss 1"),
            std::string::npos);
}

// An LSTM group beside GPT-2's baseline: not compared (no ratio, its own verdict), unranked for time to
// target; GPT-2's ring still is. A sweep of one run each says "one run" once for the table.
TEST(Comparison, OnlyGroupsOfTheBaselinesModelAndDataAreCompared) {
  runs::SweepPlan plan;
  plan.name = "models";
  plan.out_dir = test::scratch_dir();
  plan.axes = {"model", "strategy", "seed"};
  add_cell(plan, "single", 0, 1000, 3.0, "gpt2");
  add_cell(plan, "ring", 0, 1200, 3.0, "gpt2");
  add_cell(plan, "single", 0, 5000, 2.0, "lstm_lm");
  runs::ReportOptions options;
  options.baseline = "model=gpt2 strategy=single";
  const Comparison c = compare_cells(plan, options, "--baseline", "--target-loss");
  ASSERT_EQ(c.groups.size(), 3u);
  EXPECT_TRUE(c.groups[1].same_model_data);
  EXPECT_NEAR(c.groups[1].speed.ratio, 1.2, 1e-12);
  EXPECT_FALSE(c.groups[2].same_model_data);
  EXPECT_EQ(c.groups[2].speed.rounds, 0);
  EXPECT_TRUE(std::isnan(c.cells[2].speed_ratio));
  EXPECT_EQ(speed_verdict(c, 2), "no baseline of the same model and data");

  write_report(plan, {}, options);
  const std::string md = test::read_text(plan.out_dir / "report.md");
  EXPECT_NE(md.find("| model=lstm_lm strategy=single | 1 | 5000 | 0.0128 | 2 | - | no baseline of the same model and "
                    "data |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| - | model=lstm_lm strategy=single | 1 of 1 |"), std::string::npos) << md;
  EXPECT_EQ(md.find("(one run, no interval)"), std::string::npos) << md;
  EXPECT_NE(md.find("One run per group: no intervals."), std::string::npos) << md;
  const std::string csv = test::read_text(plan.out_dir / "results.csv");
  EXPECT_NE(csv.find("no baseline of the same model and data"), std::string::npos) << csv;
}

}  // namespace
}  // namespace gradsweep
