#pragma once
// Expanding an experiment's matrix into cells.
//
//   matrix:  {axis: [value, ...], ...}   every combination, in file order, the last axis varying fastest
//   exclude: [{axis: value or [values]}] drops the combinations that match every key of one entry
//   include: [{key: value, ...}]         adds one cell per entry (keys: axes or any config path)
//   repeat:  N | {seeds: [s, ...]}       each cell N times with train.seed, seed+1, ... (or the seeds given)
//            {count: N, vary_seed: false} each cell N times with the same seed (speed comparisons); the
//                                         repetition is then part of the cell's identity
//
// An axis is any configuration key path ("train.micro_batch", "model.preset") or a short name:
// strategy (strategy.name; a mapping value replaces the whole strategy section), model (model.name, idem),
// precision (strategy.precision), nodes, ranks_per_node, threads (launcher.*), seed (train.seed),
// link_bandwidth (launcher.link.bandwidth) and dilation (launcher.dilation) of an emulated cluster.
// exclude compares values as written (text), so "1e-3" does not match "0.001".
//
// The sections arrive read and typed (sweep_sections.hpp); a point of the matrix refers to their values
// by position, and cell_tree.hpp sets them in the cell's tree.
#include "config/config_error.hpp"
#include "experiment/plan/sweep_sections.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gradsweep::experiment {

struct MatrixPoint {
  std::vector<int> value_index;      // per matrix axis; -1 = not set by the matrix (include entries)
  int include_index = -1;            // >= 0: the cell is SweepSections::include[include_index]
  int repeat = 0;                    // 0-based repetition
  std::optional<std::int64_t> seed;  // repeat: {seeds: [...]}: this repetition's seed
};

struct SweepMatrix {
  std::vector<Axis> axes;           // matrix axes, then keys that only include entries set
  std::vector<MatrixPoint> points;  // the cells, before deduplication
  int repeats = 1;
  bool vary_seed = true;  // false: repeat: {count: N, vary_seed: false}
};

// Bound on a sweep's size (docs/experiments.md): cells in all unless the user raises it (`--max-cells`).
inline constexpr std::size_t kDefaultMaxCells = 10000;

// The points of the sweep. The sections' problems go to `diag` in the order expansion meets them, among
// them a sweep of more than `max_cells` cells (then no points are built).
SweepMatrix expand_matrix(const SweepSections& sections, config::Diagnostics& diag,
                          std::size_t max_cells = kDefaultMaxCells);

}  // namespace gradsweep::experiment
