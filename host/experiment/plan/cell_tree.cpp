#include "experiment/plan/cell_tree.hpp"

#include "config/key_path.hpp"

#include <algorithm>

namespace gradsweep::experiment {

namespace {

// A mapping value for a plugin axis replaces the whole section ({name: ps, mode: async}).
void set_axis(YAML::Node& root, const std::string& axis, const YAML::Node& value) {
  if ((axis == "strategy" || axis == "model") && value.IsMap())
    root[axis] = value;
  else
    config::set_key_path(root, axis_path(axis), value);
}

// Sets the point's values in `root`. Values of another document are cloned: assigning a node of one
// document into another makes yaml-cpp merge their memory, and every cell planned would then keep the nodes
// of all the cells before it.
void apply_point(YAML::Node& root, const SweepSections& sweep, const SweepMatrix& matrix, const MatrixPoint& point,
                 bool clone) {
  const auto value = [&](const YAML::Node& v) { return clone ? YAML::Clone(v) : v; };
  for (std::size_t a = 0; a < point.value_index.size(); ++a)
    if (point.value_index[a] >= 0)
      set_axis(root, matrix.axes[a].name, value(sweep.matrix[a].values[point.value_index[a]]));
  if (point.include_index >= 0)
    for (const auto& [key, v] : sweep.include[point.include_index].values) set_axis(root, key, value(v));
  if (point.seed) {
    config::set_key_path(root, "train.seed", YAML::Node(*point.seed));
  } else if (point.repeat > 0 && matrix.vary_seed) {
    // repeat: N: the cell's own seed (default 1234, as in the host's schema), plus the repetition.
    std::int64_t seed = 1234;
    if (const YAML::Node s = config::find_key_path(root, "train.seed"); s && s.IsScalar()) {
      try {
        seed = s.as<std::int64_t>();
      } catch (const YAML::Exception&) {
      }
    }
    config::set_key_path(root, "train.seed", YAML::Node(seed + point.repeat));
  }
}

}  // namespace

CellTree cell_tree(const ExperimentFile& experiment, const SweepMatrix& matrix, const MatrixPoint& point,
                   Positions positions) {
  CellTree tree;
  if (positions == Positions::Dropped) {
    tree.root = YAML::Clone(experiment.cells);
    apply_point(tree.root, experiment.sweep, matrix, point, true);
  } else {
    const ExperimentFile again = experiment.reread();
    tree.root = again.cells;
    apply_point(tree.root, again.sweep, matrix, point, false);
  }
  for (const auto& item : tree.root) {
    const std::string key = item.first.Scalar();
    if (std::find(cell_sections().begin(), cell_sections().end(), key) != cell_sections().end())
      tree.cell[key] = item.second;
  }
  return tree;
}

std::string describe_point(const ExperimentFile& experiment, const SweepMatrix& matrix, const MatrixPoint& point) {
  const CellTree tree = cell_tree(experiment, matrix, point, Positions::Dropped);
  std::string text;
  for (const auto& axis : matrix.axes) {
    const YAML::Node value = config::find_key_path(tree.root, axis.path);
    if (value) text += (text.empty() ? "" : " ") + axis.name + "=" + value_text(value);
  }
  return text.empty() ? "the base configuration" : text;
}

}  // namespace gradsweep::experiment
