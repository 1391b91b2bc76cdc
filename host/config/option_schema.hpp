#pragma once
// Checks one YAML mapping against a list of OptionSpec and produces typed values.
//
// The host's own sections (train, eval, ...) and every plugin's section are validated by this same
// code, so an unknown key or a wrong type gets the same message wherever it is.
#include "config/config_error.hpp"

#include <gradsweep/sdk/options.hpp>

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

namespace gradsweep::config {

// The values a numeric key accepts. Every integer and number of the host's schema has one, so that a 0
// that would divide (metrics.log_every) or a size that would overflow a product (train.batch_size x
// seq_len) is refused here with file:line:column rather than found as SIGFPE in the middle of a run.
struct ValueRange {
  double min = -HUGE_VAL, max = HUGE_VAL;
  bool open_min = false, open_max = false;  // exclude the bound itself: (0, 1) rather than [0, 1]
  bool contains(double v) const;
  std::string text() const;  // "[1, 1000000000]", "(0, inf)"
};
// A key's spec, its range and, for a string, its choices: how the host declares its own options.
struct HostOption {
  sdk::OptionSpec spec;
  ValueRange range{};
  const char* choices = nullptr;  // "adamw|sgd": the only values accepted; nullptr: any
  const char* unit = "";          // what a number counts ("steps", "s", "FLOP/s"), for the reference
};
std::vector<sdk::OptionSpec> specs_of(const std::vector<HostOption>& options);

// `section` is the mapping (may be undefined: all defaults), `path` its dotted name for messages
// ("model"), `ignored` keys the caller handles itself (e.g. "name"). Problems go to `diag`.
sdk::Options resolve_options(const YAML::Node& section, const std::string& path,
                             const std::vector<sdk::OptionSpec>& specs, const std::set<std::string>& ignored,
                             Diagnostics& diag);
// The same, also refusing a value outside its key's range.
sdk::Options resolve_options(const YAML::Node& section, const std::string& path, const std::vector<HostOption>& options,
                             const std::set<std::string>& ignored, Diagnostics& diag);
// The range and choices part alone, on values already resolved from `section`.
void check_ranges(const YAML::Node& section, const std::string& path, const std::vector<HostOption>& options,
                  const sdk::Options& values, Diagnostics& diag);

// A plugin's declared choices (sdk::OptionDecl), parallel to its specs: "ring|native|hierarchical", or ""
// for any value. The one place where a value outside its key's choices is refused, with file:line:column,
// the key, the value and the allowed list; plugins then need not check them by hand.
using OptionChoices = std::vector<std::string>;
sdk::Options resolve_options(const YAML::Node& section, const std::string& path,
                             const std::vector<sdk::OptionSpec>& specs, const OptionChoices& choices,
                             const std::set<std::string>& ignored, Diagnostics& diag);
void check_choices(const YAML::Node& section, const std::string& path, const std::vector<sdk::OptionSpec>& specs,
                   const OptionChoices& choices, const sdk::Options& values, Diagnostics& diag);
// "ring|native" -> {"ring", "native"}.
std::vector<std::string> split_choices(const std::string& choices);
// The one check of a value against its key's choices, for the host's keys and the plugins' alike: false,
// with "file:line:column: path.key: 'rign' is not one of ring, native, hierarchical" in `diag` (at the
// section, with `default_note` appended, when the value is a default rather than written in the file).
bool check_choice(const YAML::Node& section, const std::string& path, const std::string& key, const std::string& value,
                  const std::string& choices, const std::string& default_note, Diagnostics& diag);

// Typed value -> YAML scalar, for writing the resolved configuration.
YAML::Node to_yaml(const sdk::Options& options);

const char* type_name(sdk::OptionType type);

}  // namespace gradsweep::config
