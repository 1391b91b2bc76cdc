#pragma once
// The sweep's own sections of an experiment file (matrix, exclude, include, repeat; their meaning is in
// sweep_matrix.hpp), read once into types when the file is read (experiment_file.hpp). Every value keeps
// its node of the parsed file, and so the file:line:column that messages name; matrix expansion and the
// cells' trees (cell_tree.hpp) work on these types instead of walking the file's YAML again.
#include "config/config_error.hpp"

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gradsweep::experiment {

struct Axis {
  std::string name;  // as written in the matrix (or in an include entry)
  std::string path;  // the configuration key it sets: "strategy.name", "launcher.nodes"
};

// The configuration key an axis name sets ("nodes" -> "launcher.nodes"); other names are paths already.
std::string axis_path(const std::string& axis);

// A value as one line of text: scalars as written, anything else as flow YAML.
std::string value_text(const YAML::Node& value);

// Repetitions of each cell at most (docs/experiments.md).
inline constexpr long long kMaxRepeats = 1000;

// One axis of the matrix and its values as written.
struct MatrixAxis {
  Axis axis;
  std::vector<YAML::Node> values;  // nodes of the file: each keeps its line and column
  std::vector<std::string> texts;  // value_text of each: what exclude compares
};

// One valid exclude entry: for each matrix axis it names, the values (as text) that a combination must
// have on that axis to be dropped.
struct ExcludeRule {
  std::vector<std::pair<int, std::vector<std::string>>> wanted;  // axis index, values
};

// One valid include entry: its keys (axes, or any configuration key path) and values, in file order.
struct IncludeEntry {
  std::vector<std::pair<std::string, YAML::Node>> values;
};

struct SweepSections {
  explicit SweepSections(const std::string& file = "")
      : matrix_problems(file), repeat_problems(file), exclude_problems(file), include_problems(file) {}

  YAML::Node matrix_where;  // the matrix section, or the file's top without one: where sweep-wide messages point
  std::vector<MatrixAxis> matrix;
  std::vector<ExcludeRule> exclude;
  std::vector<IncludeEntry> include;
  bool include_written = false;   // the file has an include key, even one of the wrong shape
  std::size_t include_count = 0;  // include entries as written, valid or not (counted against the cell limit)
  // Per repetition, its seed; nullopt: the cell's own (plus the repetition unless vary_seed is false).
  std::vector<std::optional<std::int64_t>> seeds{std::nullopt};
  bool vary_seed = true;
  // Each section's problems, kept apart: expand_matrix reports them in the order it meets them.
  config::Diagnostics matrix_problems, repeat_problems, exclude_problems, include_problems;
};

// Reads matrix, exclude, include and repeat of a parsed experiment file; `file` names it in messages.
SweepSections read_sweep_sections(const YAML::Node& root, const std::string& file);

}  // namespace gradsweep::experiment
