#pragma once
// docs/reference/configuration.md: every key a cell or an experiment file accepts, from the tables the
// host validates against (config/cell_config, experiment/launcher_options) and from each plugin's own
// declared options, so that the page says exactly what the code checks.
#include "plugins/plugin_registry.hpp"

#include <string>

namespace gradsweep::reference {

// The page, with the model and strategy plugins of `plugins` (each kind in name order).
std::string configuration_reference(const plugins::PluginRegistry& plugins);

}  // namespace gradsweep::reference
