#pragma once
// A plugin's section of a configuration resolved against what the plugin declares: its keys, types,
// defaults and choices (plugin_declarations.hpp), the host's own keys of the section (the plugin's name, the
// model's init_from: config::host_keys_of) left to the host. The one way the host resolves a plugin's
// options: the trainer, the planner and the conformance kit all come here.
#include "config/cell_config.hpp"
#include "config/config_error.hpp"
#include "plugins/plugin_registry.hpp"

#include <gradsweep/sdk/options.hpp>

#include <yaml-cpp/yaml.h>

#include <string>

namespace gradsweep::plugins {

// `node` is the section ("model" or "strategy") as written; problems go to `diag` with file:line:column.
sdk::Options resolve_plugin_options(const PluginRecord& record, const YAML::Node& node, const std::string& section,
                                    config::Diagnostics& diag);

// The same for a loaded cell's section; throws config::ConfigError listing every problem.
sdk::Options resolve_plugin_options(const PluginRecord& record, const config::CellConfig& config,
                                    const std::string& section);

}  // namespace gradsweep::plugins
