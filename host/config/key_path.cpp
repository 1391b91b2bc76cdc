#include "config/key_path.hpp"

#include <stdexcept>

namespace gradsweep::config {

bool is_key_path(const std::string& dotted) {
  if (dotted.empty() || dotted.front() == '.' || dotted.back() == '.') return false;
  return dotted.find("..") == std::string::npos;
}

std::vector<std::string> split_key_path(const std::string& dotted) {
  if (!is_key_path(dotted)) throw std::invalid_argument("'" + dotted + "' is not a key path (a.b.c)");
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    const std::size_t dot = dotted.find('.', start);
    parts.push_back(dotted.substr(start, dot - start));
    if (dot == std::string::npos) return parts;
    start = dot + 1;
  }
}

void set_key_path(YAML::Node root, const std::string& dotted, const YAML::Node& value) {
  const std::vector<std::string> parts = split_key_path(dotted);
  if (!root.IsDefined() || (!root.IsMap() && !root.IsNull()))  // a null tree becomes a mapping, as in yaml-cpp
    throw std::invalid_argument("cannot set '" + dotted + "': the tree is not a mapping");
  // yaml-cpp nodes are handles: descend by indexing the parent afresh, never by reassigning a handle (that
  // would make two keys share one node).
  const auto descend = [&](const auto& self, YAML::Node node, std::size_t i) -> void {
    if (i + 1 == parts.size()) {
      node[parts[i]] = value;
      return;
    }
    if (!node[parts[i]] || !node[parts[i]].IsMap()) node[parts[i]] = YAML::Node(YAML::NodeType::Map);
    self(self, node[parts[i]], i + 1);
  };
  descend(descend, root, 0);
}

YAML::Node find_key_path(const YAML::Node& root, const std::string& dotted) {
  if (!is_key_path(dotted)) return YAML::Node(YAML::NodeType::Undefined);
  std::vector<YAML::Node> chain{root};
  for (const auto& part : split_key_path(dotted)) {
    const YAML::Node& node = chain.back();
    if (!node || !node.IsMap() || !node[part]) return YAML::Node(YAML::NodeType::Undefined);
    chain.push_back(node[part]);
  }
  return chain.back();
}

}  // namespace gradsweep::config
