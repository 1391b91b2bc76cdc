#pragma once
// A comparison (comparison.hpp) as results.csv columns and as the report's tables.
//
// Columns added to every row (docs/results.md lists them): per cell `group`, `round`,
// `speed_vs_baseline`, `time_to_target_s`, `tokens_to_target`, `bytes_to_target` ("not reached" when the
// cell never got there), `target_loss`; per group, repeated on each of its rows, `group.n`,
// `group.<metric>.{median,ci95_low,ci95_high}` for tokens_per_sec, step_time_s, val_loss, time_to_target_s,
// and `group.speed_vs_baseline{,.ci95_low,.ci95_high}`, `group.verdict`. Interval columns are empty for a
// group with fewer than two finished cells.
#include "analysis/comparison.hpp"
#include "analysis/report_section.hpp"
#include "analysis/results_table.hpp"

#include <string>
#include <vector>

namespace gradsweep::analysis {

void add_comparison_columns(ResultsTable& table, const Comparison& comparison);

// The "Comparison with the baseline" and "Time to target" sections of the report (none when no cell
// finished). Values are `median [95% interval]`; a value from one run has no brackets, and the table's note
// says so once.
std::vector<ReportSection> comparison_sections(const Comparison& comparison);

// Plain verdict of a group against the baseline: "faster", "slower", "not resolved", "baseline",
// "no baseline of the same model and data", ...
std::string speed_verdict(const Comparison& comparison, int group);

}  // namespace gradsweep::analysis
