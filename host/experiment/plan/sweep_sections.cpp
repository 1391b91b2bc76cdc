#include "experiment/plan/sweep_sections.hpp"

#include "config/key_path.hpp"

#include <map>

namespace gradsweep::experiment {
using config::Diagnostics;

namespace {

// Index of the axis that `key` names (by name or by the path it sets), or -1.
int find_axis(const std::vector<MatrixAxis>& axes, const std::string& key) {
  const std::string path = axis_path(key);
  for (std::size_t i = 0; i < axes.size(); ++i)
    if (axes[i].axis.name == key || axes[i].axis.path == path) return static_cast<int>(i);
  return -1;
}

void read_matrix(const YAML::Node& root, SweepSections& s) {
  const YAML::Node matrix = root["matrix"];
  s.matrix_where = matrix ? matrix : root;
  if (!matrix || !matrix.IsMap()) return;
  for (const auto& item : matrix) {
    const std::string name = item.first.as<std::string>();
    if (!config::is_key_path(name)) {
      s.matrix_problems.error(item.first, "matrix." + name, "not a configuration key path");
      continue;
    }
    if (!item.second.IsSequence() || item.second.size() == 0) {
      s.matrix_problems.error(item.second, "matrix." + name, "expected a non-empty list of values");
      continue;
    }
    if (find_axis(s.matrix, name) >= 0) s.matrix_problems.error(item.first, "matrix." + name, "the same key twice");
    MatrixAxis axis{{name, axis_path(name)}, {}, {}};
    for (const auto& v : item.second) {
      axis.values.push_back(v);
      axis.texts.push_back(value_text(v));
    }
    s.matrix.push_back(std::move(axis));
  }
}

// A count of repetitions, 1 to kMaxRepeats, or nullopt after saying why not.
std::optional<long long> repeat_count(const YAML::Node& n, const std::string& key, const std::string& expected,
                                      const std::string& why_bounded, Diagnostics& diag) {
  long long count = 0;
  try {
    count = n.as<long long>();
  } catch (const YAML::Exception&) {
  }
  if (count < 1) {
    diag.error(n, key, expected + ", got '" + value_text(n) + "'");
    return std::nullopt;
  }
  if (count > kMaxRepeats) {
    diag.error(
        n, key,
        value_text(n) + " repetitions is more than the " + std::to_string(kMaxRepeats) + " allowed" + why_bounded);
    return std::nullopt;
  }
  return count;
}

// repeat: {count: N, vary_seed: true|false}; vary_seed defaults to true, as repeat: N.
void read_repeat_count(const YAML::Node& repeat, SweepSections& s) {
  for (const auto& item : repeat) {
    const std::string key = item.first.as<std::string>();
    if (key != "count" && key != "vary_seed")
      s.repeat_problems.error(item.first, "repeat." + key, "unknown key; repeat: {count: N, vary_seed: true|false}");
  }
  if (const auto n =
          repeat_count(repeat["count"], "repeat.count", "expected a positive integer", "", s.repeat_problems))
    s.seeds.assign(static_cast<std::size_t>(*n), std::nullopt);
  if (const YAML::Node v = repeat["vary_seed"]) {
    try {
      s.vary_seed = v.as<bool>();
    } catch (const YAML::Exception&) {
      s.repeat_problems.error(v, "repeat.vary_seed", "expected true or false, got '" + value_text(v) + "'");
    }
  }
}

// repeat: N, {seeds: [...]} or {count: N, vary_seed: ...}.
void read_repeat(const YAML::Node& root, SweepSections& s) {
  const YAML::Node repeat = root["repeat"];
  if (!repeat) return;
  if (repeat.IsScalar()) {
    if (const auto n = repeat_count(repeat, "repeat", "expected a positive integer or {seeds: [...]}",
                                    " (each repetition is a whole run of every cell)", s.repeat_problems))
      s.seeds.assign(static_cast<std::size_t>(*n), std::nullopt);
  } else if (repeat.IsMap() && repeat["count"]) {
    // {count: N, vary_seed: false}: N runs of one configuration and one seed, for speed comparisons.
    read_repeat_count(repeat, s);
  } else if (repeat.IsMap() && repeat["seeds"] && repeat["seeds"].IsSequence() && repeat.size() == 1 &&
             repeat["seeds"].size() > 0) {
    s.seeds.clear();
    for (const auto& seed : repeat["seeds"]) {
      try {
        s.seeds.push_back(seed.as<std::int64_t>());
      } catch (const YAML::Exception&) {
        s.repeat_problems.error(seed, "repeat.seeds", "expected an integer, got '" + value_text(seed) + "'");
      }
    }
  } else {
    s.repeat_problems.error(repeat, "repeat",
                            "expected a positive integer, {seeds: [s1, s2, ...]} or {count: N, vary_seed: false}");
  }
}

// Each exclude entry as the axes it names and the values it drops; an entry naming something that is not
// a matrix axis is refused whole.
void read_exclude(const YAML::Node& root, SweepSections& s) {
  const YAML::Node exclude = root["exclude"];
  if (!exclude || !exclude.IsSequence()) return;
  for (std::size_t e = 0; e < exclude.size(); ++e) {
    const YAML::Node entry = exclude[e];
    const std::string where = "exclude[" + std::to_string(e) + "]";
    if (!entry.IsMap()) {
      s.exclude_problems.error(entry, where, "expected a mapping of axis: value (or [values])");
      continue;
    }
    ExcludeRule rule;
    bool valid = true;
    for (const auto& item : entry) {
      const std::string key = item.first.as<std::string>();
      const int axis = find_axis(s.matrix, key);
      if (axis < 0) {
        std::string known;
        for (const auto& a : s.matrix) known += (known.empty() ? "" : ", ") + a.axis.name;
        s.exclude_problems.error(item.first, where + "." + key,
                                 "not a matrix axis; axes: " + (known.empty() ? "none" : known));
        valid = false;
        continue;
      }
      std::vector<std::string> texts;
      if (item.second.IsSequence())
        for (const auto& w : item.second) texts.push_back(value_text(w));
      else
        texts.push_back(value_text(item.second));
      rule.wanted.emplace_back(axis, std::move(texts));
    }
    if (valid) s.exclude.push_back(std::move(rule));
  }
}

void read_include(const YAML::Node& root, SweepSections& s) {
  const YAML::Node include = root["include"];
  s.include_written = static_cast<bool>(include);
  if (!include || !include.IsSequence()) return;
  s.include_count = include.size();
  for (std::size_t i = 0; i < include.size(); ++i) {
    const YAML::Node entry = include[i];
    const std::string where = "include[" + std::to_string(i) + "]";
    if (!entry.IsMap() || entry.size() == 0) {
      s.include_problems.error(entry, where, "expected a mapping of key: value");
      continue;
    }
    IncludeEntry included;
    for (const auto& item : entry) {
      const std::string key = item.first.as<std::string>();
      if (!config::is_key_path(key))
        s.include_problems.error(item.first, where + "." + key, "not a configuration key path");
      included.values.emplace_back(key, item.second);
    }
    s.include.push_back(std::move(included));
  }
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

SweepSections read_sweep_sections(const YAML::Node& root, const std::string& file) {
  SweepSections s(file);
  read_matrix(root, s);
  read_repeat(root, s);
  read_exclude(root, s);
  read_include(root, s);
  return s;
}

}  // namespace gradsweep::experiment
