#pragma once
// Time-to-target: how much wall time, how many tokens and how many bytes a cell spent until its
// validation loss first reached a target. Wall time is the sum of time_s.step over the steps up to and
// including the evaluated step, tokens the steps times tokens_per_step, bytes the sum of rank 0's
// bytes_sent (metrics.jsonl, results.md). Between two evaluations the loss is taken as linear in each of
// the three, so a target crossed between evaluations at steps 100 (loss 3.0) and 200 (loss 2.0) of 2.5
// counts half the cost of steps 101-200. A target already met at the first evaluation counts that
// evaluation's cost (nothing earlier was measured).
#include <filesystem>
#include <optional>
#include <vector>

namespace gradsweep::analysis {

struct EvalPoint {
  long step = 0;
  double val_loss = 0;
  double seconds = 0, tokens = 0, bytes = 0;  // cumulative, through this step
};

// The evaluation points of a cell's metrics.jsonl, in step order; `tokens_per_step` from summary.json.
std::vector<EvalPoint> read_eval_points(const std::filesystem::path& metrics_jsonl, double tokens_per_step);

struct TargetReached {
  double step = 0, seconds = 0, tokens = 0, bytes = 0;  // interpolated
};

// A loss within this fraction of the target counts as reaching it: the same training on 1 and 2 ranks
// ends ~5e-8 apart (sums in another order), which is no miss.
inline constexpr double kTargetTolerance = 1e-6;

// std::nullopt: the target was not reached (or there was no evaluation).
std::optional<TargetReached> time_to_target(const std::vector<EvalPoint>& points, double target_loss);

}  // namespace gradsweep::analysis
