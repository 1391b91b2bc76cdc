#include "reference/configuration_reference.hpp"

#include "reference/markdown.hpp"

#include "config/cell_config.hpp"
#include "config/option_type_keyword.hpp"
#include "experiment/plan/experiment_file.hpp"
#include "experiment/launch/launcher_options.hpp"
#include "plugins/plugin_declarations.hpp"

#include <algorithm>

namespace gradsweep::reference {
namespace {

// "a|b|c" -> "`a`, `b`, `c`".
std::string choice_text(const std::string& choices) {
  std::string out;
  for (const std::string& c : config::split_choices(choices)) out += (out.empty() ? "" : ", ") + code(c);
  return out;
}

std::string default_text(const char* value, const char* missing) {
  if (value == nullptr) return missing;
  return *value == '\0' ? "`\"\"`" : code(value);
}

// Only numbers have a range; the unbounded side of a one-sided range reads as `inf` in ValueRange::text.
std::string range_text(const config::HostOption& option) {
  const auto type = option.spec.type;
  return type == sdk::OptionType::Int || type == sdk::OptionType::Float ? code(option.range.text()) : "";
}

// One host table (a cell section or a launcher section), its keys prefixed with `path`.
std::string host_table(const std::string& path, const std::vector<config::HostOption>& options) {
  std::vector<std::vector<std::string>> rows;
  for (const config::HostOption& o : options)
    rows.push_back({code(path + "." + o.spec.key), config::type_keyword(o.spec.type),
                    default_text(o.spec.default_value, "required"), o.unit, range_text(o),
                    o.choices ? choice_text(o.choices) : "", o.spec.help ? o.spec.help : ""});
  return table({"key", "type", "default", "unit", "range", "choices", "help"}, rows);
}

std::string cell_sections() {
  std::string out =
      "## Cell configuration\n\n"
      "The keys of a cell file (`gradsweep train CELL.yaml`), which are also the base of every cell of an experiment "
      "file. A number outside its range, a value outside its choices, an unknown key or a missing required key is "
      "refused before anything runs, as `file:line:column: key: what is wrong` "
      "([../configuration.md](../configuration.md)).\n\n"
      "### Plugins\n\n"
      "The host reads these keys of the `model` and `strategy` sections itself; every other key of those sections "
      "is the plugin's own ([Model plugins](#model-plugins), [Strategy plugins](#strategy-plugins)).\n\n";
  out += table({"key", "type", "default", "help"},
               {{"`model.name`", "string", "required", "the model plugin"},
                {"`model.init_from`", "string", "unset", "a Hugging Face model directory to start from"},
                {"`strategy.name`", "string", code(config::kDefaultStrategy), "the strategy plugin"},
                {"`plugins.paths`", "list of strings", "`[]`", "extra plugin directories, searched first"}});
  for (const auto& [section, options] : config::host_options())
    out += "\n### `" + section + "`\n\n" + host_table(section, options);
  return out;
}

std::string experiment_sections() {
  std::string keys;
  for (const std::string& k : experiment::sweep_keys()) keys += (keys.empty() ? "" : ", ") + code(k);
  std::string out =
      "\n## Experiment file\n\n"
      "An experiment file (`gradsweep plan`/`run`) is a cell configuration plus the sweep's own top-level keys: " +
      keys + " ([../experiments.md](../experiments.md) says what each holds). The `launcher` section's keys:\n\n";
  out += "### `launcher`\n\n" + host_table("launcher", experiment::launcher_options());
  out += "\n### `launcher.slurm`\n\n" + host_table("launcher.slurm", experiment::slurm_options()) +
         "\n`launcher.slurm.extra` (more sbatch options) and `launcher.slurm.setup` (shell lines run before srun) are "
         "lists of strings.\n";
  out += "\n### `launcher.link`\n\n" + host_table("launcher.link", experiment::link_options());
  out += "\n### `launcher.elastic`\n\n" + host_table("launcher.elastic", experiment::elastic_options());
  return out;
}

std::string plugin_section(const plugins::PluginRecord& plugin) {
  const char* section = plugin.kind == sdk::PluginKind::Model ? "model" : "strategy";
  std::string out = "\n### `" + plugin.name + "`\n\n" + plugin.summary + "\n\n";
  const std::vector<sdk::OptionSpec> specs = plugins::option_specs(plugin);
  if (specs.empty()) return out + "No options.\n";
  const config::OptionChoices choices = plugins::option_choices(plugin);
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const sdk::OptionSpec& o = specs[i];
    rows.push_back({code(std::string(section) + "." + o.key), config::type_keyword(o.type),
                    default_text(o.default_value, "none (optional)"),
                    i < choices.size() && !choices[i].empty() ? choice_text(choices[i]) : "", o.help ? o.help : ""});
  }
  return out + table({"key", "type", "default", "choices", "help"}, rows);
}

std::string plugin_sections(const plugins::PluginRegistry& registry, sdk::PluginKind kind, const std::string& title) {
  std::vector<const plugins::PluginRecord*> plugins;
  for (const auto& p : registry.plugins())
    if (p.kind == kind) plugins.push_back(&p);
  std::sort(plugins.begin(), plugins.end(), [](const auto* a, const auto* b) { return a->name < b->name; });
  std::string out = "\n## " + title + "\n\n";
  out += plugins.empty() ? "None found.\n" : "Each plugin's options, as it declares them (`gradsweep plugins NAME`).\n";
  for (const plugins::PluginRecord* p : plugins) out += plugin_section(*p);
  return out;
}

}  // namespace

std::string configuration_reference(const plugins::PluginRegistry& plugins) {
  return "# Configuration reference\n\n"
         "Generated from the code by `gradsweep reference` ([README.md](README.md)): do not edit.\n\n" +
         cell_sections() + experiment_sections() + plugin_sections(plugins, sdk::PluginKind::Model, "Model plugins") +
         plugin_sections(plugins, sdk::PluginKind::Strategy, "Strategy plugins");
}

}  // namespace gradsweep::reference
