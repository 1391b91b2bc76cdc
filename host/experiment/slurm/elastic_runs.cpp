#include "experiment/slurm/elastic_runs.hpp"

#include "experiment/launch/elastic_cell.hpp"
#include "experiment/launch/provenance.hpp"

#include <algorithm>
#include <stdexcept>

namespace gradsweep::experiment::slurm {
namespace fs = std::filesystem;

std::pair<int, int> parse_elastic_range(const std::string& text) {
  const std::size_t slash = text.find('/');
  try {
    if (slash != std::string::npos) {
      std::size_t used_k = 0, used_n = 0;
      const int k = std::stoi(text.substr(0, slash), &used_k);
      const int n = std::stoi(text.substr(slash + 1), &used_n);
      if (used_k == slash && used_n == text.size() - slash - 1 && k >= 1 && k <= n) return {k, n};
    }
  } catch (const std::logic_error&) {
  }
  throw std::invalid_argument("--elastic '" + text + "': expected MIN/NODES with 1 <= MIN <= NODES, e.g. 2/3");
}

std::vector<std::string> parse_node_list(const std::string& text) {
  std::vector<std::string> nodes;
  for (std::size_t at = 0; at <= text.size();) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    nodes.push_back(text.substr(at, comma - at));
    if (nodes.back().empty()) throw std::invalid_argument("--nodes '" + text + "': an empty host name");
    at = comma + 1;
  }
  return nodes;
}

nlohmann::json elastic_record_after(const nlohmann::json& previous, const ElasticRun& run) {
  std::vector<runs::CellResize> resizes;
  std::vector<std::string> last_nodes;
  int last_count = run.planned_nodes;
  if (previous.is_object()) {
    resizes = runs::resizes_from_json(previous.value("resizes", nlohmann::json::array()));
    last_nodes = previous.value("node_list", std::vector<std::string>{});
    last_count = previous.value("nodes", run.planned_nodes);
  }
  const int count = static_cast<int>(run.nodes.size());
  if (count != last_count) {
    std::vector<int> lost;
    std::string gone;
    for (std::size_t i = 0; i < last_nodes.size(); ++i)
      if (std::find(run.nodes.begin(), run.nodes.end(), last_nodes[i]) == run.nodes.end()) {
        lost.push_back(static_cast<int>(i));
        gone += (gone.empty() ? "" : ",") + last_nodes[i];
      }
    const std::string why = "slurm job " + run.job + " (restart " + std::to_string(run.restart) + ") was given " +
                            std::to_string(count) + " of " + std::to_string(run.planned_nodes) +
                            " nodes (--nodes=" + std::to_string(run.min_nodes) + "-" +
                            std::to_string(run.planned_nodes) + ")" + (gone.empty() ? "" : "; not " + gone);
    resizes.push_back({last_count, count, lost, why, runs::utc_now_iso8601()});
  }
  nlohmann::json record = elastic_record(run.min_nodes, run.planned_nodes, count, resizes, true);
  record["node_list"] = run.nodes;
  return record;
}

nlohmann::json recorded_elastic(const fs::path& cell_dir) {
  const nlohmann::json provenance = recorded_provenance(cell_dir);
  if (!provenance.is_object() || !provenance.contains("elastic") || !provenance["elastic"].is_object()) return nullptr;
  return provenance["elastic"];
}

std::vector<runs::CellResize> recorded_resizes(const fs::path& cell_dir) {
  const nlohmann::json record = recorded_elastic(cell_dir);
  return record.is_object() ? runs::resizes_from_json(record.value("resizes", nlohmann::json::array()))
                            : std::vector<runs::CellResize>{};
}

}  // namespace gradsweep::experiment::slurm
