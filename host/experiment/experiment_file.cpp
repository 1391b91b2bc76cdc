#include "experiment/experiment_file.hpp"

#include "config/cell_config.hpp"
#include "config/duplicate_keys.hpp"
#include "config/yaml_guard.hpp"
#include "experiment/report_options_reader.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace gradsweep::experiment {
namespace fs = std::filesystem;
using host::ConfigError;
using host::Diagnostics;

namespace {

YAML::Node parse(const std::string& text, const std::string& file, const std::vector<std::string>& overrides) {
  YAML::Node root = host::parse_config_yaml(text, file);
  if (!root || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) throw ConfigError({file + ": expected a mapping at the top level"});
  for (const auto& o : overrides) host::apply_override(root, o);
  return root;
}

std::string joined(const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k;
  return out;
}

}  // namespace

// From the host's schema, so that a section added there (tracking, say) is one an experiment file may hold.
const std::vector<std::string>& cell_sections() {
  static const std::vector<std::string> sections = [] {
    std::vector<std::string> keys{"model", "strategy"};
    for (const auto& [section, options] : host::host_options()) keys.push_back(section);
    keys.push_back("plugins");
    return keys;
  }();
  return sections;
}

const std::vector<std::string>& sweep_keys() {
  static const std::vector<std::string> keys{"name",    "description", "launcher", "matrix",
                                             "exclude", "include",     "repeat",   "report"};
  return keys;
}

YAML::Node ExperimentFile::fresh_root() const { return parse(text, file.string(), overrides); }

ExperimentFile load_experiment_file(const fs::path& file, const std::vector<std::string>& overrides) {
  std::ifstream in(file);
  if (!in) throw ConfigError({file.string() + ": cannot open experiment file"});
  std::stringstream text;
  text << in.rdbuf();

  ExperimentFile exp;
  exp.file = fs::absolute(file).lexically_normal();
  exp.base_dir = exp.file.parent_path();
  exp.text = text.str();
  exp.overrides = overrides;
  exp.root = parse(exp.text, file.string(), overrides);

  Diagnostics diag(file.string());
  {
    // Refused at once: every cell is built from this tree, and each would repeat the same guess.
    Diagnostics duplicates(file.string());
    check_duplicate_keys(parse(exp.text, file.string(), {}), duplicates);
    duplicates.throw_if_any();
  }
  for (const auto& item : exp.root) {
    const std::string key = item.first.as<std::string>();
    const auto known = [&](const std::vector<std::string>& keys) {
      return std::find(keys.begin(), keys.end(), key) != keys.end();
    };
    if (!known(sweep_keys()) && !known(cell_sections()))
      diag.error(item.first, key,
                 "unknown top-level key; a cell's sections (" + joined(cell_sections()) + ") or the sweep's (" +
                     joined(sweep_keys()) + ")");
  }
  for (const char* key : {"name", "description"})
    if (const YAML::Node n = exp.root[key]; n && !n.IsScalar()) diag.error(n, key, "expected a string");
  for (const char* key : {"launcher", "matrix"})
    if (const YAML::Node n = exp.root[key]; n && !n.IsNull() && !n.IsMap()) diag.error(n, key, "expected a mapping");
  for (const char* key : {"exclude", "include"})
    if (const YAML::Node n = exp.root[key]; n && !n.IsNull() && !n.IsSequence())
      diag.error(n, key, "expected a list of mappings (axis: value)");
  parse_report_options(exp.root, diag);
  try {
    diag.throw_if_any();
  } catch (const ConfigError& e) {
    exp.problems = e.problems();
  }

  exp.name = exp.root["name"] ? exp.root["name"].Scalar() : file.stem().string();
  for (const char c : exp.name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
      throw ConfigError({file.string() + ": name: '" + exp.name +
                         "' must be letters, digits, '-', '_' or '.' (it names the output directory)"});
  return exp;
}

}  // namespace gradsweep::experiment
