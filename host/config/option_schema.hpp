#pragma once
// Checks one YAML mapping against a list of OptionSpec and produces typed values.
//
// The host's own sections (train, eval, ...) and every plugin's section are validated by this same
// code, so an unknown key or a wrong type gets the same message wherever it is.
#include "config/config_error.hpp"

#include <gradsweep/sdk/options.hpp>

#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
#include <vector>

namespace gradsweep::host {

// `section` is the mapping (may be undefined: all defaults), `path` its dotted name for messages
// ("model"), `ignored` keys the caller handles itself (e.g. "name"). Problems go to `diag`.
sdk::Options resolve_options(const YAML::Node& section, const std::string& path,
                             const std::vector<sdk::OptionSpec>& specs, const std::set<std::string>& ignored,
                             Diagnostics& diag);

// Typed value -> YAML scalar, for writing the resolved configuration.
YAML::Node to_yaml(const sdk::Options& options);

const char* type_name(sdk::OptionType type);

}  // namespace gradsweep::host
