#include "config/duplicate_keys.hpp"

#include <map>

namespace gradsweep::config {

namespace {

std::string position(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.line < 0 ? "?" : std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

void walk(const YAML::Node& node, const std::string& path, Diagnostics& diag) {
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) walk(node[i], path + "[" + std::to_string(i) + "]", diag);
    return;
  }
  if (!node.IsMap()) return;
  std::map<std::string, YAML::Node> first;  // key text -> its first key node
  for (const auto& item : node) {
    // A non-scalar key is unusual YAML; the validators refuse it by name, nothing to compare here.
    if (!item.first.IsScalar()) continue;
    const std::string key = item.first.Scalar();
    const std::string full = path.empty() ? key : path + "." + key;
    const auto [it, inserted] = first.emplace(key, item.first);
    if (!inserted)
      diag.error(item.first, full, "duplicate key (first at line " + position(it->second) + "); remove one of them");
    walk(item.second, full, diag);
  }
}

}  // namespace

void check_duplicate_keys(const YAML::Node& root, Diagnostics& diag) { walk(root, "", diag); }

}  // namespace gradsweep::config
