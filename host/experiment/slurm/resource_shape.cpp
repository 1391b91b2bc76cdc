#include "experiment/slurm/resource_shape.hpp"

#include <cctype>
#include <map>

namespace gradsweep::experiment::slurm {

namespace {

// Every field of the shape, separated by a byte no YAML scalar here holds: equal keys = one array.
std::string shape_key(const runs::PlannedCell& c) {
  const runs::SlurmSettings& s = c.slurm;
  std::string key = std::to_string(c.nodes) + '\x1f' + std::to_string(c.ranks_per_node) + '\x1f' +
                    std::to_string(c.threads_per_rank) + '\x1f' + std::to_string(c.gpus_per_node) + '\x1f' +
                    c.time_limit + '\x1f' + s.partition + '\x1f' + s.account + '\x1f' + s.time + '\x1f' + s.qos +
                    '\x1f' + s.constraint + '\x1f' + std::to_string(s.gpus_per_node) + '\x1f' +
                    std::to_string(s.cpus_per_task) + '\x1f' + std::to_string(s.max_concurrent) + '\x1f' +
                    std::to_string(c.elastic_min_nodes);
  for (const auto& e : s.extra) key += '\x1f' + e;
  key += '\x1e';  // the setup lines after a separator of their own: an extra line never reads as one
  for (const auto& line : s.setup) key += '\x1f' + line;
  return key;
}

// "01:30:00" -> "01h30m00s"; other characters that are not [A-Za-z0-9] are dropped.
std::string time_token(const std::string& time) {
  static const char kUnits[] = {'s', 'm', 'h'};
  std::string out;
  int colons = 0;
  for (char c : time) colons += c == ':';
  int unit = colons;  // the unit of the first field: 2 colons -> hours
  for (char c : time) {
    if (c == ':') {
      if (unit >= 0 && unit < 3) out += kUnits[unit];
      --unit;
    } else if (c == '-') {
      out += 'd';
    } else if (std::isalnum(static_cast<unsigned char>(c))) {
      out += c;
    }
  }
  if (colons > 0 && unit >= 0 && unit < 3) out += kUnits[unit];
  return out;
}

}  // namespace

std::string shape_name(const runs::PlannedCell& c) {
  std::string name = "n" + std::to_string(c.nodes) + "x" + std::to_string(c.ranks_per_node);
  if (c.elastic_min_nodes > 0 && c.elastic_min_nodes < c.nodes) name += "-e" + std::to_string(c.elastic_min_nodes);
  const int gpus = c.gpus_per_node > 0 ? c.gpus_per_node : c.slurm.gpus_per_node;
  if (gpus > 0) name += "-g" + std::to_string(gpus);
  const std::string& time = c.time_limit.empty() ? c.slurm.time : c.time_limit;
  if (!time.empty()) name += "-t" + time_token(time);
  return name;
}

std::vector<ShapeGroup> group_by_shape(const std::vector<runs::PlannedCell>& cells) {
  std::vector<ShapeGroup> groups;
  std::map<std::string, std::size_t> index;
  std::map<std::string, int> names_used;
  for (const runs::PlannedCell& c : cells) {
    const std::string key = shape_key(c);
    auto [it, added] = index.emplace(key, groups.size());
    if (added) {
      // Two shapes that differ only in, say, the partition get the same readable name: number them.
      std::string name = shape_name(c);
      if (const int n = names_used[name]++; n > 0) name += "-" + std::to_string(n + 1);
      groups.push_back({name, {}});
    }
    groups[it->second].cells.push_back(&c);
  }
  return groups;
}

}  // namespace gradsweep::experiment::slurm
