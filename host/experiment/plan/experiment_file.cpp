#include "experiment/plan/experiment_file.hpp"

#include "config/cell_config.hpp"
#include "config/duplicate_keys.hpp"
#include "config/yaml_guard.hpp"
#include "experiment/plan/report_options_reader.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace gradsweep::experiment {
namespace fs = std::filesystem;
using config::ConfigError;
using config::Diagnostics;

namespace {

YAML::Node parse(const std::string& text, const std::string& file, const std::vector<std::string>& overrides) {
  YAML::Node root = config::parse_config_yaml(text, file);
  if (!root || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) throw ConfigError({file + ": expected a mapping at the top level"});
  for (const auto& o : overrides) config::apply_override(root, o);
  return root;
}

std::string joined(const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k;
  return out;
}

// Unknown top-level keys and sweep sections of the wrong shape.
void check_top_level(const YAML::Node& root, Diagnostics& diag) {
  for (const auto& item : root) {
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
    if (const YAML::Node n = root[key]; n && !n.IsScalar()) diag.error(n, key, "expected a string");
  for (const char* key : {"launcher", "matrix"})
    if (const YAML::Node n = root[key]; n && !n.IsNull() && !n.IsMap()) diag.error(n, key, "expected a mapping");
  for (const char* key : {"exclude", "include"})
    if (const YAML::Node n = root[key]; n && !n.IsNull() && !n.IsSequence())
      diag.error(n, key, "expected a list of mappings (axis: value)");
}

// plugins.paths, as the plugin search path takes them; a path that is not text is the cells' to refuse.
std::vector<fs::path> plugin_paths(const YAML::Node& root, const fs::path& base_dir) {
  std::vector<fs::path> paths;
  const YAML::Node plugins = root["plugins"];
  const YAML::Node listed = plugins && plugins.IsMap() ? plugins["paths"] : YAML::Node();
  if (listed && listed.IsSequence())
    for (const auto& p : listed)
      if (p.IsScalar())
        paths.push_back(fs::path(p.Scalar()).is_absolute() ? fs::path(p.Scalar()) : base_dir / p.Scalar());
  return paths;
}

// The typed form of a parsed file; `root` becomes its `cells` (the sweep's sections taken out of it).
// Top-level problems (the report's options among them) go to `diag`.
void read_typed(ExperimentFile& exp, YAML::Node root, const fs::path& given, Diagnostics& diag) {
  exp.sweep = read_sweep_sections(root, exp.file.string());
  exp.report = parse_report_options(root, diag);
  const YAML::Node name = root["name"], description = root["description"];
  exp.name = name ? name.Scalar() : given.stem().string();
  exp.description = description && description.IsScalar() ? description.Scalar() : "";
  exp.plugin_paths = plugin_paths(root, exp.base_dir);
  for (const auto& key : sweep_keys())
    if (key != "launcher") root.remove(key);  // the launcher is each cell's own (cell_launcher.hpp)
  exp.cells = root;
}

}  // namespace

// From the host's schema, so that a section added there (tracking, say) is one an experiment file may hold.
const std::vector<std::string>& cell_sections() {
  static const std::vector<std::string> sections = [] {
    std::vector<std::string> keys{"model", "strategy"};
    for (const auto& [section, options] : config::host_options()) keys.push_back(section);
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

ExperimentFile ExperimentFile::reread() const {
  ExperimentFile again;
  again.file = file;
  again.base_dir = base_dir;
  again.text = text;
  again.overrides = overrides;
  Diagnostics ignored(file.string());  // reported when the file was first read
  read_typed(again, parse(text, file.string(), overrides), file, ignored);
  again.name = name;
  again.problems = problems;
  return again;
}

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
  const YAML::Node root = parse(exp.text, file.string(), overrides);

  Diagnostics diag(file.string());
  {
    // Refused at once: every cell is built from this tree, and each would repeat the same guess.
    Diagnostics duplicates(file.string());
    check_duplicate_keys(parse(exp.text, file.string(), {}), duplicates);
    duplicates.throw_if_any();
  }
  check_top_level(root, diag);
  read_typed(exp, root, file, diag);
  try {
    diag.throw_if_any();
  } catch (const ConfigError& e) {
    exp.problems = e.problems();
  }

  for (const char c : exp.name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
      throw ConfigError({file.string() + ": name: '" + exp.name +
                         "' must be letters, digits, '-', '_' or '.' (it names the output directory)"});
  return exp;
}

}  // namespace gradsweep::experiment
