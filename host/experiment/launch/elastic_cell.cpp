#include "experiment/launch/elastic_cell.hpp"

#include "config/option_schema.hpp"
#include "experiment/launch/launcher_options.hpp"
#include "util/atomic_file.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <regex>

namespace gradsweep::experiment {
namespace fs = std::filesystem;

int resolve_elastic(const YAML::Node& root, int nodes, config::Diagnostics& diag) {
  const YAML::Node launcher = root["launcher"];
  if (!launcher || !launcher.IsMap() || !launcher["elastic"]) return 0;
  const YAML::Node section = launcher["elastic"];
  if (!section.IsMap()) {
    diag.error(section, "launcher.elastic", "expected a mapping, e.g. {min_nodes: 2}");
    return 0;
  }
  const sdk::Options options = config::resolve_options(section, "launcher.elastic", elastic_options(), {}, diag);
  const int min_nodes = static_cast<int>(options.integer("min_nodes"));
  const YAML::Node where = section["min_nodes"] ? section["min_nodes"] : section;
  if (min_nodes < 1 || min_nodes > nodes)
    diag.error(where, "launcher.elastic.min_nodes",
               std::to_string(min_nodes) + " is not between 1 and the cell's " + std::to_string(nodes) +
                   " node(s): it is the fewest nodes the cell may go on with after losing some");
  return min_nodes;
}

std::vector<int> culprit_ranks(const std::string& failure) {
  // The two culprit-naming forms of classify_failure (runs/cell_status.hpp).
  static const std::regex killed("^killed: rank ([0-9]+) "), behind("^hang: ranks? ([0-9,]+) did not finish ");
  std::smatch m;
  std::vector<int> ranks;
  if (std::regex_search(failure, m, killed)) {
    ranks.push_back(std::stoi(m[1].str()));
  } else if (std::regex_search(failure, m, behind)) {
    const std::string list = m[1].str();
    for (std::size_t at = 0; at < list.size();) {
      const std::size_t comma = std::min(list.find(',', at), list.size());
      if (comma > at) ranks.push_back(std::stoi(list.substr(at, comma - at)));
      at = comma + 1;
    }
  }
  return ranks;
}

std::vector<int> lost_nodes(const std::string& failure, int nodes, int ranks_per_node,
                            const std::vector<int>& unreachable) {
  std::vector<int> lost;
  // A hang's culprits are inferred from the flight-recorder dumps that came in within their grace period: on a
  // loaded machine a live rank on a reachable node can miss it and be named with the unreachable one (seen in
  // CI: "ranks 1,3" for a cut link to node 3). A node found unreachable is the fact; a killed rank is one too.
  const bool hang = failure.rfind("hang:", 0) == 0;
  for (const int rank : hang && !unreachable.empty() ? std::vector<int>{} : culprit_ranks(failure))
    if (rank >= 0 && rank / std::max(1, ranks_per_node) < nodes) lost.push_back(rank / std::max(1, ranks_per_node));
  for (const int node : unreachable)
    if (node >= 0 && node < nodes) lost.push_back(node);
  std::sort(lost.begin(), lost.end());
  lost.erase(std::unique(lost.begin(), lost.end()), lost.end());
  return lost;
}

std::optional<runs::PlannedCell> shrunk_cell(const runs::PlannedCell& running, const std::vector<int>& lost) {
  const int left = running.nodes - static_cast<int>(lost.size());
  if (running.elastic_min_nodes <= 0 || lost.empty() || left < running.elastic_min_nodes) return std::nullopt;
  runs::PlannedCell next = running;
  next.nodes = left;
  return next;
}

runs::CellResize make_resize(const runs::PlannedCell& from, const runs::PlannedCell& to, const std::vector<int>& lost,
                             const std::string& why) {
  return {from.nodes, to.nodes, lost, why, runs::utc_now_iso8601()};
}

nlohmann::json elastic_record(int min_nodes, int planned_nodes, int nodes_at_end,
                              const std::vector<runs::CellResize>& resizes, bool with_changes) {
  nlohmann::json j{{"min_nodes", min_nodes},
                   {"planned_nodes", planned_nodes},
                   {"nodes", nodes_at_end},
                   {"resized", runs::resize_history(resizes)}};
  if (!with_changes) return j;
  j["resizes"] = runs::resizes_json(resizes);
  return j;
}

void annotate_elastic_summary(const fs::path& cell_dir, const nlohmann::json& record) {
  const fs::path file = cell_dir / "summary.json";
  std::ifstream in(file);
  if (!in) return;
  nlohmann::json summary = nlohmann::json::parse(in, nullptr, false);
  if (!summary.is_object()) return;
  nlohmann::json scalars = record;
  for (const char* changes : {"resizes", "node_list"}) scalars.erase(changes);
  summary["elastic"] = std::move(scalars);
  util::write_file_atomically(file, summary.dump(2) + "\n");
}

}  // namespace gradsweep::experiment
