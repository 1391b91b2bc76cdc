#pragma once
// Duplicate keys in a YAML document. yaml-cpp 0.7 keeps every pair of a mapping and answers a lookup with
// the first, while code that iterates sees the last: `train: {steps: 2, steps: 3}` trained 3 steps and a
// second `train:` section was ignored. Either reading is a silent guess, so a duplicate is an error.
#include "config/config_error.hpp"

#include <yaml-cpp/yaml.h>

#include <string>

namespace gradsweep::config {

// Walks `root` (as parsed, so that nodes have their positions) and reports every key that repeats one
// earlier in the same mapping, at the repeat, naming the line:column of the first.
void check_duplicate_keys(const YAML::Node& root, Diagnostics& diag);

}  // namespace gradsweep::config
