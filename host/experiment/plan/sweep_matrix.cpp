#include "experiment/plan/sweep_matrix.hpp"

#include <algorithm>
#include <limits>

namespace gradsweep::experiment {
using config::Diagnostics;

namespace {

// Refuses a sweep of more than `max_cells` cells before building any: 10^6 cells would take the planner
// minutes and gigabytes. Counted before exclude, which can only remove cells.
bool within_cell_limit(const SweepSections& s, std::size_t max_cells, Diagnostics& diag) {
  // Saturating products: a matrix of many long axes must not wrap around to a small count.
  constexpr std::size_t kHuge = std::numeric_limits<std::size_t>::max() / 4;
  const std::size_t repeats = s.seeds.size();
  std::size_t combos = 1;
  std::string shape;
  for (const auto& axis : s.matrix) {
    const std::size_t size = axis.values.size();
    combos = size != 0 && combos > kHuge / size ? kHuge : combos * size;
    shape += (shape.empty() ? "" : " x ") + axis.axis.name + " " + std::to_string(size);
  }
  if (s.matrix.empty()) combos = s.include_count > 0 ? 0 : 1;
  std::size_t cells = std::min(kHuge, combos + s.include_count);
  cells = repeats != 0 && cells > kHuge / repeats ? kHuge : cells * repeats;
  if (cells <= max_cells) return true;
  if (s.include_count > 0) shape += (shape.empty() ? "" : " + ") + std::to_string(s.include_count) + " included";
  if (repeats > 1) shape = "(" + shape + ") x repeat " + std::to_string(repeats);
  diag.error(s.matrix_where, "matrix",
             (cells == kHuge ? std::string("more than 10^18") : std::to_string(cells)) + " cells (" + shape +
                 ") is more than the limit of " + std::to_string(max_cells) +
                 "; narrow the sweep, or raise the limit with --max-cells N");
  return false;
}

// Every combination of value indices, the last axis fastest.
std::vector<std::vector<int>> all_combinations(const std::vector<MatrixAxis>& matrix) {
  std::vector<std::vector<int>> combos{{}};
  for (const auto& axis : matrix) {
    std::vector<std::vector<int>> next;
    for (const auto& c : combos)
      for (std::size_t v = 0; v < axis.values.size(); ++v) {
        next.push_back(c);
        next.back().push_back(static_cast<int>(v));
      }
    combos = std::move(next);
  }
  return combos;
}

// Whether a combination has, on every axis an exclude rule names, one of the values it drops.
bool excluded(const ExcludeRule& rule, const std::vector<MatrixAxis>& matrix, const std::vector<int>& combo) {
  if (rule.wanted.empty()) return false;
  for (const auto& [axis, texts] : rule.wanted)
    if (std::find(texts.begin(), texts.end(), matrix[axis].texts[combo[axis]]) == texts.end()) return false;
  return true;
}

// Index of the axis that `key` names (by name or by the path it sets), or -1.
int find_axis(const std::vector<Axis>& axes, const std::string& key) {
  const std::string path = axis_path(key);
  for (std::size_t i = 0; i < axes.size(); ++i)
    if (axes[i].name == key || axes[i].path == path) return static_cast<int>(i);
  return -1;
}

// Each base point once per repetition, with that repetition's seed.
void add_repeats(const std::vector<MatrixPoint>& base, const SweepSections& s, SweepMatrix& m) {
  m.repeats = static_cast<int>(std::max<std::size_t>(s.seeds.size(), 1));
  if (m.repeats > 1 && m.vary_seed && find_axis(m.axes, "seed") < 0) m.axes.push_back({"seed", "train.seed"});
  for (const auto& p : base)
    for (std::size_t r = 0; r < s.seeds.size(); ++r) {
      MatrixPoint point = p;
      point.repeat = static_cast<int>(r);
      point.seed = s.seeds[r];
      m.points.push_back(point);
    }
}

}  // namespace

SweepMatrix expand_matrix(const SweepSections& s, Diagnostics& diag, std::size_t max_cells) {
  SweepMatrix m;
  m.vary_seed = s.vary_seed;
  for (const auto& axis : s.matrix) m.axes.push_back(axis.axis);
  diag.append(s.matrix_problems);
  diag.append(s.repeat_problems);
  if (!within_cell_limit(s, max_cells, diag)) return m;

  std::vector<std::vector<int>> combos = all_combinations(s.matrix);
  diag.append(s.exclude_problems);
  for (const auto& rule : s.exclude)
    combos.erase(std::remove_if(combos.begin(), combos.end(),
                                [&](const std::vector<int>& c) { return excluded(rule, s.matrix, c); }),
                 combos.end());
  const std::size_t matrix_axes = m.axes.size();
  std::vector<MatrixPoint> base;
  for (const auto& c : combos) base.push_back({c, -1, 0, std::nullopt});
  // An empty matrix is one cell: the base configuration; with include entries, only they.
  if (matrix_axes == 0) base = {{{}, -1, 0, std::nullopt}};
  if (matrix_axes > 0 && combos.empty() && !s.include_written)
    diag.error(s.matrix_where, "exclude", "excludes every cell");
  diag.append(s.include_problems);
  if (matrix_axes == 0 && s.include_count > 0) base.clear();
  for (std::size_t i = 0; i < s.include.size(); ++i) {
    for (const auto& [key, value] : s.include[i].values)
      if (find_axis(m.axes, key) < 0) m.axes.push_back({key, axis_path(key)});
    base.push_back({std::vector<int>(matrix_axes, -1), static_cast<int>(i), 0, std::nullopt});
  }
  add_repeats(base, s, m);
  return m;
}

}  // namespace gradsweep::experiment
