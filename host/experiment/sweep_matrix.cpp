#include "experiment/sweep_matrix.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <sstream>

namespace gradsweep::experiment {
using host::Diagnostics;

namespace {

std::vector<std::string> split_path(const std::string& dotted) {
  std::vector<std::string> parts;
  std::stringstream ss(dotted);
  for (std::string part; std::getline(ss, part, '.');) parts.push_back(part);
  return parts;
}

// Index of the axis that `key` names (by name or by the path it sets), or -1.
int find_axis(const std::vector<Axis>& axes, const std::string& key) {
  const std::string path = axis_path(key);
  for (std::size_t i = 0; i < axes.size(); ++i)
    if (axes[i].name == key || axes[i].path == path) return static_cast<int>(i);
  return -1;
}

bool matches(const YAML::Node& wanted, const std::string& actual) {
  if (wanted.IsSequence()) {
    for (const auto& w : wanted)
      if (value_text(w) == actual) return true;
    return false;
  }
  return value_text(wanted) == actual;
}

// A mapping value for a plugin axis replaces the whole section ({name: ps, mode: async}).
bool replaces_section(const std::string& axis, const YAML::Node& value) {
  return (axis == "strategy" || axis == "model") && value.IsMap();
}

void set_axis(YAML::Node& root, const std::string& axis, const YAML::Node& value) {
  if (replaces_section(axis, value))
    root[axis] = value;
  else
    set_path(root, axis_path(axis), value);
}

// repeat: {count: N, vary_seed: true|false}; vary_seed defaults to true, as repeat: N.
void parse_repeat_count(const YAML::Node& repeat, Diagnostics& diag, std::vector<std::optional<std::int64_t>>& seeds,
                        bool& vary_seed) {
  for (const auto& item : repeat) {
    const std::string key = item.first.as<std::string>();
    if (key != "count" && key != "vary_seed")
      diag.error(item.first, "repeat." + key, "unknown key; repeat: {count: N, vary_seed: true|false}");
  }
  long long n = 0;
  try {
    n = repeat["count"].as<long long>();
  } catch (const YAML::Exception&) {
  }
  if (n < 1)
    diag.error(repeat["count"], "repeat.count",
               "expected a positive integer, got '" + value_text(repeat["count"]) + "'");
  else if (n > kMaxRepeats)
    diag.error(
        repeat["count"], "repeat.count",
        value_text(repeat["count"]) + " repetitions is more than the " + std::to_string(kMaxRepeats) + " allowed");
  else
    seeds.assign(static_cast<std::size_t>(n), std::nullopt);
  if (const YAML::Node v = repeat["vary_seed"]) {
    try {
      vary_seed = v.as<bool>();
    } catch (const YAML::Exception&) {
      diag.error(v, "repeat.vary_seed", "expected true or false, got '" + value_text(v) + "'");
    }
  }
}

// repeat: N, {seeds: [...]} or {count: N, vary_seed: ...}: the seed of each repetition (nullopt: the cell's
// own, plus the repetition unless vary_seed is false).
std::vector<std::optional<std::int64_t>> repeat_seeds(const YAML::Node& root, Diagnostics& diag, bool& vary_seed) {
  std::vector<std::optional<std::int64_t>> seeds{std::nullopt};
  if (const YAML::Node repeat = root["repeat"]) {
    if (repeat.IsScalar()) {
      long long n = 0;
      try {
        n = repeat.as<long long>();
      } catch (const YAML::Exception&) {
      }
      if (n < 1)
        diag.error(repeat, "repeat", "expected a positive integer or {seeds: [...]}, got '" + repeat.Scalar() + "'");
      else if (n > kMaxRepeats)
        diag.error(repeat, "repeat",
                   repeat.Scalar() + " repetitions is more than the " + std::to_string(kMaxRepeats) +
                       " allowed (each repetition is a whole run of every cell)");
      else
        seeds.assign(static_cast<std::size_t>(n), std::nullopt);
    } else if (repeat.IsMap() && repeat["count"]) {
      // {count: N, vary_seed: false}: N runs of one configuration and one seed, for speed comparisons.
      parse_repeat_count(repeat, diag, seeds, vary_seed);
    } else if (repeat.IsMap() && repeat["seeds"] && repeat["seeds"].IsSequence() && repeat.size() == 1 &&
               repeat["seeds"].size() > 0) {
      seeds.clear();
      for (const auto& s : repeat["seeds"]) {
        try {
          seeds.push_back(s.as<std::int64_t>());
        } catch (const YAML::Exception&) {
          diag.error(s, "repeat.seeds", "expected an integer, got '" + value_text(s) + "'");
        }
      }
    } else {
      diag.error(repeat, "repeat",
                 "expected a positive integer, {seeds: [s1, s2, ...]} or {count: N, vary_seed: false}");
    }
  }
  return seeds;
}

// Refuses a sweep of more than `max_cells` cells before building any: 10^6 cells would take the planner
// minutes and gigabytes. Counted before exclude, which can only remove cells.
bool within_cell_limit(const YAML::Node& root, const std::vector<Axis>& axes, const std::vector<std::size_t>& sizes,
                       std::size_t repeats, std::size_t max_cells, Diagnostics& diag) {
  const YAML::Node include = root["include"];
  const std::size_t included = include && include.IsSequence() ? include.size() : 0;
  // Saturating products: a matrix of many long axes must not wrap around to a small count.
  constexpr std::size_t kHuge = std::numeric_limits<std::size_t>::max() / 4;
  std::size_t combos = 1;
  std::string shape;
  for (std::size_t a = 0; a < sizes.size(); ++a) {
    combos = sizes[a] != 0 && combos > kHuge / sizes[a] ? kHuge : combos * sizes[a];
    shape += (shape.empty() ? "" : " x ") + axes[a].name + " " + std::to_string(sizes[a]);
  }
  if (sizes.empty()) combos = included > 0 ? 0 : 1;
  std::size_t cells = std::min(kHuge, combos + included);
  cells = repeats != 0 && cells > kHuge / repeats ? kHuge : cells * repeats;
  if (cells <= max_cells) return true;
  if (included > 0) shape += (shape.empty() ? "" : " + ") + std::to_string(included) + " included";
  if (repeats > 1) shape = "(" + shape + ") x repeat " + std::to_string(repeats);
  diag.error(root["matrix"] ? root["matrix"] : root, "matrix",
             (cells == kHuge ? std::string("more than 10^18") : std::to_string(cells)) + " cells (" + shape +
                 ") is more than the limit of " + std::to_string(max_cells) +
                 "; narrow the sweep, or raise the limit with --max-cells N");
  return false;
}

}  // namespace

std::string axis_path(const std::string& axis) {
  static const std::map<std::string, std::string> aliases{{"strategy", "strategy.name"},
                                                          {"model", "model.name"},
                                                          {"precision", "strategy.precision"},
                                                          {"nodes", "launcher.nodes"},
                                                          {"ranks_per_node", "launcher.ranks_per_node"},
                                                          {"threads", "launcher.threads"},
                                                          {"seed", "train.seed"},
                                                          {"link_bandwidth", "launcher.link.bandwidth"},
                                                          {"dilation", "launcher.dilation"}};
  const auto it = aliases.find(axis);
  return it == aliases.end() ? axis : it->second;
}

std::string value_text(const YAML::Node& value) {
  if (!value || value.IsNull()) return "";
  if (value.IsScalar()) return value.Scalar();
  YAML::Emitter out;
  out.SetMapFormat(YAML::Flow);
  out.SetSeqFormat(YAML::Flow);
  out << value;
  return out.c_str();
}

void set_path(YAML::Node root, const std::string& dotted, const YAML::Node& value) {
  const auto parts = split_path(dotted);
  // yaml-cpp nodes are handles: descend with fresh handles rather than reassigning one.
  std::function<void(YAML::Node, std::size_t)> set = [&](YAML::Node node, std::size_t i) {
    if (i + 1 == parts.size()) {
      node[parts[i]] = value;
      return;
    }
    if (!node[parts[i]] || !node[parts[i]].IsMap()) node[parts[i]] = YAML::Node(YAML::NodeType::Map);
    set(node[parts[i]], i + 1);
  };
  set(root, 0);
}

YAML::Node find_path(const YAML::Node& root, const std::string& dotted) {
  std::vector<YAML::Node> chain{root};
  for (const auto& part : split_path(dotted)) {
    const YAML::Node& node = chain.back();
    if (!node || !node.IsMap() || !node[part]) return YAML::Node(YAML::NodeType::Undefined);
    chain.push_back(node[part]);
  }
  return chain.back();
}

namespace {

// The matrix's axes, in file order; returns how many values each has.
std::vector<std::size_t> read_matrix_axes(const YAML::Node& root, std::vector<Axis>& axes, Diagnostics& diag) {
  std::vector<std::size_t> sizes;
  const YAML::Node matrix = root["matrix"];
  if (!matrix || !matrix.IsMap()) return sizes;
  for (const auto& item : matrix) {
    const std::string name = item.first.as<std::string>();
    if (name.empty() || name.front() == '.' || name.back() == '.') {
      diag.error(item.first, "matrix." + name, "not a configuration key path");
      continue;
    }
    if (!item.second.IsSequence() || item.second.size() == 0) {
      diag.error(item.second, "matrix." + name, "expected a non-empty list of values");
      continue;
    }
    if (find_axis(axes, name) >= 0) diag.error(item.first, "matrix." + name, "the same key twice");
    axes.push_back({name, axis_path(name)});
    sizes.push_back(item.second.size());
  }
  return sizes;
}

// Every combination of value indices, the last axis fastest.
std::vector<std::vector<int>> all_combinations(const std::vector<std::size_t>& sizes) {
  std::vector<std::vector<int>> combos{{}};
  for (const std::size_t size : sizes) {
    std::vector<std::vector<int>> next;
    for (const auto& c : combos)
      for (std::size_t v = 0; v < size; ++v) {
        next.push_back(c);
        next.back().push_back(static_cast<int>(v));
      }
    combos = std::move(next);
  }
  return combos;
}

// One exclude entry as (axis, wanted values); nullopt when it names something that is not an axis.
std::optional<std::vector<std::pair<int, YAML::Node>>> exclude_entry(const YAML::Node& entry, const std::string& where,
                                                                     const std::vector<Axis>& axes, Diagnostics& diag) {
  std::vector<std::pair<int, YAML::Node>> wanted;
  bool valid = true;
  for (const auto& item : entry) {
    const std::string key = item.first.as<std::string>();
    const int axis = find_axis(axes, key);
    if (axis < 0) {
      std::string known;
      for (const auto& a : axes) known += (known.empty() ? "" : ", ") + a.name;
      diag.error(item.first, where + "." + key, "not a matrix axis; axes: " + (known.empty() ? "none" : known));
      valid = false;
      continue;
    }
    wanted.emplace_back(axis, item.second);
  }
  if (!valid) return std::nullopt;
  return wanted;
}

// Drops the combinations that match every key of some exclude entry.
void apply_exclude(const YAML::Node& root, const std::vector<Axis>& axes, std::vector<std::vector<int>>& combos,
                   Diagnostics& diag) {
  const YAML::Node exclude = root["exclude"];
  if (!exclude || !exclude.IsSequence()) return;
  for (std::size_t e = 0; e < exclude.size(); ++e) {
    const YAML::Node entry = exclude[e];
    const std::string where = "exclude[" + std::to_string(e) + "]";
    if (!entry.IsMap()) {
      diag.error(entry, where, "expected a mapping of axis: value (or [values])");
      continue;
    }
    const auto wanted = exclude_entry(entry, where, axes, diag);
    if (!wanted) continue;
    const YAML::Node matrix = root["matrix"];
    std::vector<std::vector<int>> kept;
    for (const auto& c : combos) {
      bool all = !wanted->empty();
      for (const auto& [axis, w] : *wanted) all = all && matches(w, value_text(matrix[axes[axis].name][c[axis]]));
      if (!all) kept.push_back(c);
    }
    combos = std::move(kept);
  }
}

// One point per include entry; keys that are not matrix axes become axes of their own.
void add_included(const YAML::Node& root, std::size_t matrix_axes, std::vector<Axis>& axes,
                  std::vector<MatrixPoint>& base, Diagnostics& diag) {
  const YAML::Node include = root["include"];
  if (!include || !include.IsSequence()) return;
  if (matrix_axes == 0 && include.size() > 0) base.clear();  // only the included cells
  for (std::size_t i = 0; i < include.size(); ++i) {
    const YAML::Node entry = include[i];
    if (!entry.IsMap() || entry.size() == 0) {
      diag.error(entry, "include[" + std::to_string(i) + "]", "expected a mapping of key: value");
      continue;
    }
    for (const auto& item : entry) {
      const std::string key = item.first.as<std::string>();
      if (find_axis(axes, key) < 0) axes.push_back({key, axis_path(key)});
    }
    base.push_back({std::vector<int>(matrix_axes, -1), static_cast<int>(i), 0, std::nullopt});
  }
}

// Each base point once per repetition, with that repetition's seed.
void add_repeats(const std::vector<MatrixPoint>& base, const std::vector<std::optional<std::int64_t>>& seeds,
                 SweepMatrix& m) {
  m.repeats = static_cast<int>(std::max<std::size_t>(seeds.size(), 1));
  if (m.repeats > 1 && m.vary_seed && find_axis(m.axes, "seed") < 0) m.axes.push_back({"seed", "train.seed"});
  for (const auto& p : base)
    for (std::size_t r = 0; r < seeds.size(); ++r) {
      MatrixPoint point = p;
      point.repeat = static_cast<int>(r);
      point.seed = seeds[r];
      m.points.push_back(point);
    }
}

}  // namespace

SweepMatrix expand_matrix(const YAML::Node& root, Diagnostics& diag, std::size_t max_cells) {
  SweepMatrix m;
  const std::vector<std::size_t> sizes = read_matrix_axes(root, m.axes, diag);
  const std::vector<std::optional<std::int64_t>> seeds = repeat_seeds(root, diag, m.vary_seed);
  if (!within_cell_limit(root, m.axes, sizes, seeds.size(), max_cells, diag)) return m;

  std::vector<std::vector<int>> combos = all_combinations(sizes);
  const std::size_t matrix_axes = m.axes.size();
  apply_exclude(root, m.axes, combos, diag);
  std::vector<MatrixPoint> base;
  for (const auto& c : combos) base.push_back({c, -1, 0, std::nullopt});
  // An empty matrix is one cell: the base configuration.
  if (matrix_axes == 0) base.clear(), base.push_back({{}, -1, 0, std::nullopt});
  if (matrix_axes > 0 && combos.empty() && !root["include"])
    diag.error(root["matrix"], "exclude", "excludes every cell");
  add_included(root, matrix_axes, m.axes, base, diag);
  add_repeats(base, seeds, m);
  return m;
}

void apply_point(YAML::Node& root, const SweepMatrix& matrix, const MatrixPoint& point, const YAML::Node* source) {
  // Values from another tree are cloned: assigning a node of one document into another makes yaml-cpp
  // merge their memory, and every cell planned would then keep the nodes of all the cells before it.
  const auto value = [&](const YAML::Node& v) { return source == nullptr ? v : YAML::Clone(v); };
  const YAML::Node& from = source == nullptr ? root : *source;
  const YAML::Node values = from["matrix"];
  for (std::size_t a = 0; a < point.value_index.size(); ++a)
    if (point.value_index[a] >= 0)
      set_axis(root, matrix.axes[a].name, value(values[matrix.axes[a].name][point.value_index[a]]));
  if (point.include_index >= 0)
    for (const auto& item : from["include"][point.include_index])
      set_axis(root, item.first.as<std::string>(), value(item.second));
  if (point.seed) {
    set_path(root, "train.seed", YAML::Node(*point.seed));
  } else if (point.repeat > 0 && matrix.vary_seed) {
    // repeat: N: the cell's own seed (default 1234, as in the host's schema), plus the repetition.
    std::int64_t seed = 1234;
    if (const YAML::Node s = find_path(root, "train.seed"); s && s.IsScalar()) {
      try {
        seed = s.as<std::int64_t>();
      } catch (const YAML::Exception&) {
      }
    }
    set_path(root, "train.seed", YAML::Node(seed + point.repeat));
  }
}

}  // namespace gradsweep::experiment
