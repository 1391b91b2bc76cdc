#include "tracking/cell_fields.hpp"

#include "util/atomic_file.hpp"

#include <fstream>
#include <sstream>

namespace gradsweep::tracking {
namespace fs = std::filesystem;

namespace {
void add_params(const std::string& key, const YAML::Node& node, Fields& out) {
  if (node.IsMap()) {
    for (const auto& item : node)
      add_params(key.empty() ? item.first.Scalar() : key + "." + item.first.Scalar(), item.second, out);
    return;
  }
  if (node.IsScalar()) {
    out.emplace_back(key, node.Scalar());
    return;
  }
  if (node.IsSequence()) {
    YAML::Emitter flow;
    flow << YAML::Flow << node;
    out.emplace_back(key, flow.c_str());
    return;
  }
  out.emplace_back(key, "");  // null
}

void add_points(const std::string& key, const nlohmann::json& value, std::int64_t step, std::int64_t ms,
                std::vector<MetricPoint>& out) {
  if (value.is_number()) out.push_back({key, value.get<double>(), ms, step});
  if (value.is_boolean()) out.push_back({key, value.get<bool>() ? 1.0 : 0.0, ms, step});
  if (value.is_object())
    for (const auto& [k, item] : value.items()) add_points(key + "." + k, item, step, ms, out);
  if (value.is_array())
    for (std::size_t i = 0; i < value.size(); ++i) add_points(key + "." + std::to_string(i), value[i], step, ms, out);
}
}  // namespace

std::string cell_name(const fs::path& cell_dir) {
  fs::path dir = fs::absolute(cell_dir).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();  // "cell-a/"
  return dir.filename().string();
}

void write_sweep_name(const fs::path& cell_dir, const std::string& name) {
  fs::create_directories(cell_dir);
  util::write_file_atomically(cell_dir / kSweepNameFile, name + "\n");
}

std::string experiment_name(const fs::path& cell_dir) {
  std::ifstream in(cell_dir / kSweepNameFile);
  std::string name;
  if (in && std::getline(in, name) && !name.empty()) return name;
  return kDefaultExperiment;
}

Fields config_params(const YAML::Node& resolved) {
  Fields params;
  add_params("", resolved, params);
  return params;
}

Fields cell_tags(const YAML::Node& resolved, int world_size, const fs::path& cell_dir) {
  Fields tags{{"strategy", resolved["strategy"]["name"].as<std::string>("")},
              {"model", resolved["model"]["name"].as<std::string>("")},
              {"world_size", std::to_string(world_size)},
              {kCellTag, cell_name(cell_dir)}};
  std::ifstream provenance(cell_dir / "provenance.json");
  if (provenance) {
    try {
      const nlohmann::json p = nlohmann::json::parse(provenance);
      tags.emplace_back("gradsweep.commit", p.at("gradsweep").value("commit", ""));
    } catch (const nlohmann::json::exception&) {
      // A provenance.json being rewritten by the launcher: the run goes without the commit.
    }
  }
  return tags;
}

std::vector<MetricPoint> metric_points(const nlohmann::json& line, std::int64_t timestamp_ms) {
  std::vector<MetricPoint> points;
  const std::int64_t step = line.value("step", std::int64_t{0});
  for (const auto& [key, value] : line.items())
    if (key != "step") add_points(key, value, step, timestamp_ms, points);
  return points;
}

}  // namespace gradsweep::tracking
