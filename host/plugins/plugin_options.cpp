#include "plugins/plugin_options.hpp"

#include "config/option_schema.hpp"
#include "plugins/plugin_declarations.hpp"

namespace gradsweep::plugins {

sdk::Options resolve_plugin_options(const PluginRecord& record, const YAML::Node& node, const std::string& section,
                                    config::Diagnostics& diag) {
  return config::resolve_options(node, section, option_specs(record), option_choices(record),
                                 config::host_keys_of(section), diag);
}

sdk::Options resolve_plugin_options(const PluginRecord& record, const config::CellConfig& config,
                                    const std::string& section) {
  config::Diagnostics diag(config.file);
  sdk::Options options = resolve_plugin_options(record, config.root[section], section, diag);
  diag.throw_if_any();
  return options;
}

}  // namespace gradsweep::plugins
