#pragma once
// The report's "Stragglers" section: the cells in which one rank computed markedly slower than the median
// rank (step_breakdown.straggler_index) or one node's link was markedly slower than the median node's
// (step_breakdown.link_straggler_index, the link probe's), naming that rank, node and host. A straggler
// slows every synchronous step of its cell, so a reader comparing strategies must know which cells had one.
#include "analysis/comparison.hpp"
#include "analysis/report_section.hpp"
#include "runs/plan_file.hpp"

#include <optional>

namespace gradsweep::analysis {

// Above these a cell is listed: a rank whose own work takes 20% longer than the median's, a node link whose
// probe transfers take twice the median node's (the probe's noise on even links stays near 1.1).
inline constexpr double kComputeStragglerAbove = 1.2;
inline constexpr double kLinkStragglerAbove = 2.0;

// Nothing when no finished cell had a straggler.
std::optional<ReportSection> straggler_section(const runs::SweepPlan& plan, const Comparison& comparison);

}  // namespace gradsweep::analysis
