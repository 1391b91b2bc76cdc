#pragma once
// The order a launcher runs a sweep's cells in: interleaved repeats. Round r holds the cells of
// repetition r (PlannedCell::repeat) in plan order, every other round reversed:
//   cells A B C, repeat 3  ->  A0 B0 C0  C1 B1 A1  A2 B2 C2
// so that a slow drift of the machine's load (another job starting, thermal throttling) falls on every
// configuration alike instead of on whichever ran last, and round r of A can be paired with round r of B
// (statistics.hpp: paired ratios). Without repeats the order is the plan's.
#include "experiment/launch/launcher.hpp"

#include <vector>

namespace gradsweep::experiment {

std::vector<runs::PlannedCell> interleaved_order(const std::vector<runs::PlannedCell>& cells);

}  // namespace gradsweep::experiment
