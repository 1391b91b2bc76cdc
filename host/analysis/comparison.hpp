#pragma once
// Repeats gathered into groups and compared with a baseline group.
//
// A group is the set of cells that differ only by seed or repetition (the axes but `seed` equal); its
// members' rounds are their positions in the plan (repetition 0, 1, ...), which the local launcher runs
// interleaved (run_order.hpp), so round r of one group ran close in time to round r of another. Per group:
// median and 95% interval (statistics.hpp) of tokens/s, step time and final val loss over the cells that
// finished ok; the paired ratio of tokens/s against the baseline, round by round, with its verdict; and
// time-to-target (time_to_target.hpp) of every cell, summarized over the cells that reached the target.
//
// Only groups of the baseline's model and data are compared with it: tokens/s and losses of an LSTM say
// nothing about a GPT-2's. The model and data are the axes named `model`, `model.*`, `data` or `data.*`;
// a group whose values there differ from the baseline's gets no ratio and the verdict
// "no baseline of the same model and data" (`--baseline` names one of its groups to compare those).
#include "runs/report_options.hpp"
#include "analysis/series_labels.hpp"
#include "analysis/statistics.hpp"
#include "runs/plan_file.hpp"
#include "analysis/time_to_target.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace gradsweep::analysis {

struct CellOutcome {  // parallel to the plan's cells
  bool ok = false;    // finished ok with a summary
  nlohmann::json summary;
  int group = -1;
  int round = 0;
  std::optional<TargetReached> to_target;
  double speed_ratio = NAN;  // tokens/s over the baseline's cell of the same round
};

struct CellGroup {
  std::string label;       // what differs between the groups: "strategy=ring ranks_per_node=2"
  AxisValues axes;         // the group's axes (seed left out)
  std::vector<int> cells;  // indices into the plan's cells, round order
  Summary tokens_per_sec, step_time_s, val_loss;
  Summary to_target_s, to_target_tokens, to_target_bytes;  // over the cells that reached the target
  int finished = 0, reached = 0;
  RatioSummary speed;           // tokens/s vs the baseline (unset for the baseline itself)
  RatioSummary to_target;       // time to target vs the baseline, rounds where both reached it
  bool same_model_data = true;  // the baseline's model and data: compared with it
};

struct Comparison {
  std::vector<CellOutcome> cells;
  std::vector<CellGroup> groups;
  int baseline = -1;            // index into groups; -1 when no cell finished
  std::string baseline_source;  // "--baseline", "report.baseline" or "first group"
  double target_loss = NAN;     // NaN: no target (no loss to default to)
  std::string target_source;    // "--target-loss", "report.target_loss", "baseline's final val loss"
  int max_repeats = 0;          // largest group
};

// Throws std::invalid_argument naming the baseline and the groups there are when `options.baseline`
// matches no group or several.
Comparison compare_cells(const runs::SweepPlan& plan, const runs::ReportOptions& options,
                         const std::string& baseline_source, const std::string& target_source);

}  // namespace gradsweep::analysis
