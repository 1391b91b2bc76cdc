#include "analysis/series_labels.hpp"

#include <map>
#include <set>

namespace gradsweep::analysis {

std::string without_options(const std::string& value) {
  const auto paren = value.find('(');
  return paren == std::string::npos || paren == 0 ? value : value.substr(0, paren);
}

std::vector<std::string> distinct_labels(const std::vector<AxisValues>& items, const std::string& fallback) {
  std::vector<std::string> labels(items.size());
  if (items.empty()) return labels;
  // Items may carry axes past the others' (a resized cell's "resized", comparison.hpp): the longest names them.
  AxisValues first = items.front();
  for (const auto& item : items)
    if (item.size() > first.size()) first = item;
  std::map<std::string, int> short_names;
  for (const auto& [axis, value] : first) ++short_names[axis.substr(axis.rfind('.') + 1)];
  for (std::size_t a = 0; a < first.size(); ++a) {
    std::set<std::string> full, brief;
    std::map<std::string, std::set<std::string>> full_of_brief;
    for (const auto& item : items) {
      const std::string& v = a < item.size() ? item[a].second : std::string();
      full.insert(v);
      full_of_brief[without_options(v)].insert(v);
    }
    if (full.size() < 2) continue;
    // Names alone suffice when no name stands for two different option sets.
    bool names_suffice = true;
    for (const auto& [name, values] : full_of_brief) names_suffice = names_suffice && values.size() == 1;
    std::string axis = first[a].first;
    const std::string tail = axis.substr(axis.rfind('.') + 1);
    if (short_names[tail] == 1) axis = tail;
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (a >= items[i].size()) continue;  // an item without the axis is told apart by the others having it
      const std::string& v = items[i][a].second;
      labels[i] += (labels[i].empty() ? "" : " ") + axis + "=" + (names_suffice ? without_options(v) : v);
    }
  }
  for (auto& l : labels)
    if (l.empty()) l = fallback;
  return labels;
}

}  // namespace gradsweep::analysis
