#include "experiment/launch/cell_locations.hpp"

#include "config/key_path.hpp"

#include <regex>

namespace gradsweep::experiment {

std::string location(const std::string& file, const YAML::Node& node) {
  try {
    if (node && node.IsDefined()) {
      const YAML::Mark mark = node.Mark();
      if (mark.line >= 0) return file + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
    }
  } catch (const YAML::Exception&) {
  }
  return file;
}

YAML::Node node_for_key(const YAML::Node& root, const std::string& key, bool want_key) {
  std::string path = key;
  while (!path.empty()) {
    const auto dot = path.rfind('.');
    const std::string parent = dot == std::string::npos ? "" : path.substr(0, dot);
    const std::string leaf = dot == std::string::npos ? path : path.substr(dot + 1);
    const YAML::Node parent_node = parent.empty() ? root : config::find_key_path(root, parent);
    if (parent_node && parent_node.IsMap())
      for (const auto& item : parent_node)
        if (item.first.Scalar() == leaf) return want_key ? item.first : item.second;
    path = parent;
  }
  return root;
}

std::string relocate(const std::string& problem, const YAML::Node& cell_root, const std::string& file) {
  static const std::regex with_position("^<cell>(?::\\d+:\\d+)?: ([^ :]+): (.*)$");
  std::smatch m;
  if (!std::regex_match(problem, m, with_position)) {
    if (problem.rfind(kEmittedName, 0) == 0) return file + problem.substr(std::string(kEmittedName).size());
    return problem;
  }
  const std::string key = m[1], message = m[2];
  const YAML::Node node = node_for_key(cell_root, key, message.rfind("unknown", 0) == 0);
  return location(file, node) + ": " + key + ": " + message;
}

}  // namespace gradsweep::experiment
