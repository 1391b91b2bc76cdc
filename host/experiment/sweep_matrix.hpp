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
// A point of the matrix refers to values by position; apply_point builds the cell from a fresh copy of
// the file's tree, so that every value keeps its line and column for error messages.
#include "config/config_error.hpp"

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gradsweep::experiment {

struct Axis {
  std::string name;  // as written in the matrix (or in an include entry)
  std::string path;  // the configuration key it sets: "strategy.name", "launcher.nodes"
};

struct MatrixPoint {
  std::vector<int> value_index;      // per matrix axis; -1 = not set by the matrix (include entries)
  int include_index = -1;            // >= 0: the cell is include[include_index]
  int repeat = 0;                    // 0-based repetition
  std::optional<std::int64_t> seed;  // repeat: {seeds: [...]}: this repetition's seed
};

struct SweepMatrix {
  std::vector<Axis> axes;           // matrix axes, then keys that only include entries set
  std::vector<MatrixPoint> points;  // the cells, before deduplication
  int repeats = 1;
  bool vary_seed = true;  // false: repeat: {count: N, vary_seed: false}
};

// The configuration key an axis name sets ("nodes" -> "launcher.nodes"); other names are paths already.
std::string axis_path(const std::string& axis);

// Bounds on a sweep's size (docs/experiments.md): repetitions of each cell, and cells in all unless the
// user raises it (`--max-cells`).
inline constexpr long long kMaxRepeats = 1000;
inline constexpr std::size_t kDefaultMaxCells = 10000;

// Reads matrix, exclude, include and repeat from the experiment's tree; problems go to `diag`, among them
// a sweep of more than `max_cells` cells (then no points are built).
SweepMatrix expand_matrix(const YAML::Node& root, host::Diagnostics& diag, std::size_t max_cells = kDefaultMaxCells);

// Sets the point's values in `root` (a fresh copy of the experiment's tree), read from its own matrix and
// include, or from `source` (the experiment's tree) when `root` is a copy of the cell sections only.
void apply_point(YAML::Node& root, const SweepMatrix& matrix, const MatrixPoint& point,
                 const YAML::Node* source = nullptr);

// Sets `root` at a dotted path to `value`, creating mappings on the way.
void set_path(YAML::Node root, const std::string& dotted, const YAML::Node& value);
// The node at a dotted path, or an undefined node.
YAML::Node find_path(const YAML::Node& root, const std::string& dotted);

// A value as one line of text: scalars as written, anything else as flow YAML.
std::string value_text(const YAML::Node& value);

}  // namespace gradsweep::experiment
