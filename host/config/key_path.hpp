#pragma once
// Dotted key paths into a configuration tree ("train.micro_batch", "launcher.link.bandwidth"): the one
// reader and setter by path, shared by --set (cell_config.hpp) and an experiment's matrix
// (experiment/plan/cell_tree.hpp), so that both create, replace and refuse alike.
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace gradsweep::config {

// Whether `dotted` names a key: non-empty parts separated by single dots ("a..b", ".a", "a." do not).
bool is_key_path(const std::string& dotted);

// The parts of a key path; throws std::invalid_argument when `dotted` is not one.
std::vector<std::string> split_key_path(const std::string& dotted);

// Sets `root` (a mapping, or null: it becomes one) at `dotted` to `value`, creating mappings on the way and replacing a
// value that is not a mapping where the path goes through it. Throws std::invalid_argument when `dotted` is not a key
// path or `root` is not a mapping.
void set_key_path(YAML::Node root, const std::string& dotted, const YAML::Node& value);

// The node at `dotted`, or an undefined node when some part of the path is missing.
YAML::Node find_key_path(const YAML::Node& root, const std::string& dotted);

}  // namespace gradsweep::config
