#include "config/cell_config.hpp"

#include "config/cell_keys.hpp"
#include "config/duplicate_keys.hpp"
#include "config/key_path.hpp"
#include "config/option_schema.hpp"
#include "config/yaml_guard.hpp"

#include <fstream>
#include <map>
#include <sstream>

namespace gradsweep::config {
namespace fs = std::filesystem;

namespace {

const std::set<std::string> kPluginSections{"model", "strategy"};

fs::path resolve_path(const fs::path& base, const std::string& p) {
  const fs::path path(p);
  return path.is_absolute() || base.empty() ? path : base / path;
}

// data.train and data.val may be a list of paths, which the schema's string type would refuse: a list of
// (non-empty) strings is handed to the schema as a string, and read as a list by data_paths(). Anything
// else goes to the schema as written, to be refused with its position.
bool is_path_list(const YAML::Node& value) {
  if (!value || !value.IsSequence() || value.size() == 0) return false;
  for (const auto& item : value)
    if (!item.IsScalar() || item.Scalar().empty()) return false;
  return true;
}

YAML::Node data_section_for_schema(const YAML::Node& data) {
  if (!data || !data.IsMap()) return data;
  YAML::Node copy = YAML::Clone(data);
  std::vector<std::string> lists;
  for (const auto& item : copy)
    if (item.first.IsScalar() && is_path_list(item.second)) lists.push_back(item.first.Scalar());
  for (const std::string& key : lists) copy[key] = copy[key][0].Scalar();
  return copy;
}

std::vector<fs::path> data_paths(const YAML::Node& value, const fs::path& base_dir) {
  std::vector<fs::path> paths;
  if (is_path_list(value))
    for (const auto& item : value) paths.push_back(resolve_path(base_dir, item.Scalar()));
  else
    paths.push_back(resolve_path(base_dir, value.Scalar()));
  return paths;
}

}  // namespace

const std::set<std::string>& host_keys_of(const std::string& section) {
  static const std::set<std::string> model{"name", "init_from"}, other{"name"};
  return section == "model" ? model : other;
}

void apply_override(YAML::Node& root, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || !is_key_path(assignment.substr(0, eq)))
    throw std::runtime_error("--set '" + assignment + "': expected key.path=value");
  const std::string key = assignment.substr(0, eq);
  set_key_path(root, key, parse_config_yaml(assignment.substr(eq + 1), "--set " + key));
}

CellConfig parse_cell_config(const std::string& yaml_text, const std::string& file_name, const fs::path& base_dir,
                             const std::vector<std::string>& overrides) {
  return parse_cell_tree(parse_config_yaml(yaml_text, file_name), file_name, base_dir, overrides);
}

namespace {

// The tree as the cell's root, with the command line's --set applied; refuses anything but a mapping and
// names unknown sections.
void read_root(CellConfig& config, const YAML::Node& root, const std::vector<std::string>& overrides,
               Diagnostics& diag) {
  config.root = root;
  if (!config.root || config.root.IsNull()) config.root = YAML::Node(YAML::NodeType::Map);
  check_duplicate_keys(config.root, diag);  // before --set, which would replace only the first of two
  if (!config.root.IsMap()) {               // before --set too, which cannot set a key in anything else
    diag.error(config.root, "(top level)", "expected a mapping");
    diag.throw_if_any();
  }
  for (const auto& o : overrides) apply_override(config.root, o);
  const auto& schema = host_options();
  std::string known;
  for (const auto& [section, options] : schema) known += section + ", ";
  for (const auto& item : config.root) {
    const std::string key = item.first.as<std::string>();
    if (!schema.count(key) && !kPluginSections.count(key) && key != "plugins")
      diag.error(item.first, key, "unknown section; known: " + known + "model, strategy, plugins");
  }
}

// The host's sections, typed and with defaults (also into config.resolved); values out of range go to
// `out_of_range`, reported with the problems found after the types (a value out of range is still a value).
std::map<std::string, sdk::Options> resolve_host_sections(CellConfig& config, Diagnostics& diag,
                                                          Diagnostics& out_of_range) {
  std::map<std::string, sdk::Options> host;
  config.resolved = YAML::Node(YAML::NodeType::Map);
  for (const auto& [section, specs] : host_options()) {
    const YAML::Node node = section == "data" ? data_section_for_schema(config.root[section]) : config.root[section];
    host[section] = resolve_options(node, section, specs_of(specs), {}, diag);
    check_ranges(config.root[section], section, specs, host[section], out_of_range);
    config.resolved[section] = to_yaml(host[section]);
    for (const HostOption& o : specs)
      if (o.spec.default_value == nullptr && !host[section].has(o.spec.key))
        diag.error(config.root[section] ? config.root[section] : config.root, section + "." + o.spec.key,
                   std::string("required key missing (") + o.spec.help + ")");
  }
  return host;
}

// model.name and strategy.name (the default strategy when there is no strategy section), and plugins.paths.
void read_plugin_choices(CellConfig& config, const fs::path& base_dir, Diagnostics& diag) {
  for (const std::string section : {"model", "strategy"}) {
    const YAML::Node node = config.root[section];
    if (section == "strategy" && !node) {
      config.strategy_name = kDefaultStrategy;
      continue;
    }
    if (!node || !node.IsMap() || !node["name"] || !node["name"].IsScalar()) {
      diag.error(node ? node : config.root, section + ".name", "required: the " + section + " plugin to use");
      continue;
    }
    (section == "model" ? config.model_name : config.strategy_name) = node["name"].Scalar();
  }
  if (const YAML::Node from =
          config.root["model"] && config.root["model"].IsMap() ? config.root["model"]["init_from"] : YAML::Node()) {
    if (!from.IsScalar() || from.Scalar().empty())
      diag.error(from, "model.init_from", "expected a directory (a Hugging Face model: model.safetensors)");
    else if (config.init_from = resolve_path(base_dir, from.Scalar()); !fs::is_directory(config.init_from))
      diag.error(from, "model.init_from", "no such directory: " + config.init_from.string());
  }
  if (const YAML::Node plugins = config.root["plugins"]) {
    const YAML::Node paths = plugins.IsMap() ? plugins["paths"] : YAML::Node();  // [] on a scalar throws
    if (!plugins.IsMap() || (paths && !paths.IsSequence()))
      diag.error(plugins, "plugins.paths", "expected a list of directories");
    else if (paths)
      for (const auto& p : paths) {
        if (p.IsScalar())
          config.plugin_paths.push_back(resolve_path(base_dir, p.Scalar()));
        else
          diag.error(p, "plugins.paths", "expected a directory");
      }
  }
}

// data: the shards, one path or a list of them each.
void read_data(CellConfig& config, const fs::path& base_dir) {
  config.train_data = data_paths(config.root["data"]["train"], base_dir);
  config.val_data = data_paths(config.root["data"]["val"], base_dir);
  for (const char* key : {"train", "val"})
    if (is_path_list(config.root["data"][key])) config.resolved["data"][key] = YAML::Clone(config.root["data"][key]);
}

// What the table's fields alone do not say: the profile's steps against the run's, the threads against this
// machine (after the ranges' problems), the device's form, and runtime.tf32 against the device.
void check_run_settings(CellConfig& config, std::map<std::string, sdk::Options>& host, Diagnostics& diag,
                        Diagnostics& out_of_range) {
  if (config.kernel_profile >= config.train.steps && config.kernel_profile > 0)
    diag.error(config.root["metrics"]["kernel_profile"], "metrics.kernel_profile",
               "profiles the steps after the first (a warm-up), so it must be below train.steps (" +
                   std::to_string(config.train.steps) + ")");
  check_threads_fit_machine(config.threads, config.root["runtime"]["threads"], "runtime.threads", diag);
  diag.append(out_of_range);
  const bool cuda = is_cuda_device(config.device);
  if (config.device != "cpu" && !cuda)
    diag.error(config.root["runtime"]["device"], "runtime.device", "expected cpu, cuda or cuda:N");
  const std::string tf32 = host["runtime"].text("tf32");
  if (tf32 == "on" && !cuda)
    diag.error(config.root["runtime"]["tf32"], "runtime.tf32",
               "on needs a CUDA device, and runtime.device is " + config.device + " (CPU matmuls have no TF32)");
  config.tf32 = tf32 == "on" || (tf32 == "auto" && cuda);
  config.resolved["runtime"]["tf32"] = config.tf32 ? "on" : "off";
}

}  // namespace

CellConfig parse_cell_tree(const YAML::Node& root, const std::string& file_name, const fs::path& base_dir,
                           const std::vector<std::string>& overrides) {
  CellConfig config;
  config.file = file_name;
  Diagnostics diag(file_name);
  read_root(config, root, overrides, diag);
  Diagnostics out_of_range(file_name);
  std::map<std::string, sdk::Options> host = resolve_host_sections(config, diag, out_of_range);
  read_plugin_choices(config, base_dir, diag);
  if (!diag.empty()) {
    diag.append(out_of_range);
    diag.throw_if_any();
  }
  store_cell_keys(config, host);
  read_data(config, base_dir);
  check_run_settings(config, host, diag, out_of_range);
  diag.throw_if_any();
  return config;
}

CellConfig load_cell_config(const fs::path& file, const std::vector<std::string>& overrides) {
  std::ifstream in(file);
  if (!in) throw ConfigError({file.string() + ": cannot open configuration file"});
  std::stringstream text;
  text << in.rdbuf();
  return parse_cell_config(text.str(), file.string(), file.parent_path(), overrides);
}

}  // namespace gradsweep::config
