#include "tracking/cell_replay.hpp"

#include "tracking/cell_fields.hpp"
#include "tracking/mlflow_run.hpp"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>

namespace gradsweep::tracking {
namespace fs = std::filesystem;

namespace {
constexpr const char* kSummary = "summary.json";

nlohmann::json read_json(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  return nlohmann::json::parse(in);
}

// Every metrics.jsonl line's points, as the live path sends them line by line.
std::vector<MetricPoint> all_points(const fs::path& cell_dir, std::int64_t timestamp_ms) {
  std::vector<MetricPoint> points;
  std::ifstream in(cell_dir / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::vector<MetricPoint> more = metric_points(nlohmann::json::parse(line), timestamp_ms);
    points.insert(points.end(), more.begin(), more.end());
  }
  return points;
}

// The id of a FINISHED run of the cell in `experiment_id`, or "". Only a finished one counts: a run that
// a server going down left RUNNING is incomplete, and the push makes the whole one.
std::string finished_run(const MlflowClient& client, const std::string& experiment_id, const std::string& cell) {
  const nlohmann::json found =
      client.post("runs/search", {{"experiment_ids", {experiment_id}},
                                  {"filter", std::string("tags.`") + kCellTag + "` = '" + cell + "'"},
                                  {"max_results", 100}});
  for (const auto& run : found.value("runs", nlohmann::json::array()))
    if (run["info"].value("status", "") == "FINISHED") return run["info"].value("run_id", "");
  return "";
}
}  // namespace

std::vector<fs::path> finished_cells(const fs::path& dir) {
  if (fs::exists(dir / kSummary)) return {dir};
  std::vector<fs::path> cells;
  if (fs::is_directory(dir / "cells"))
    for (const auto& entry : fs::directory_iterator(dir / "cells"))
      if (entry.is_directory() && fs::exists(entry.path() / kSummary)) cells.push_back(entry.path());
  std::sort(cells.begin(), cells.end());
  return cells;
}

std::string configured_uri(const fs::path& cell_dir) {
  const YAML::Node resolved = YAML::LoadFile((cell_dir / "config.resolved.yaml").string());
  return resolved["tracking"]["mlflow"].as<std::string>("");
}

PushResult push_cell(const MlflowClient& client, const fs::path& cell_dir) {
  const std::string cell = cell_name(cell_dir);
  const std::string experiment = experiment_name(cell_dir);
  if (std::string id = finished_run(client, client.experiment_id(experiment), cell); !id.empty()) return {id, true};
  const YAML::Node resolved = YAML::LoadFile((cell_dir / "config.resolved.yaml").string());
  const int world_size = read_json(cell_dir / kSummary).value("world_size", 1);
  // Started and ended now: the cell's own times are in its files (summary.json, trace.json).
  const std::int64_t start_ms = now_ms();
  RunStart start{experiment, cell, start_ms, config_params(resolved), cell_tags(resolved, world_size, cell_dir)};
  start.tags.emplace_back("status", "done");  // only finished cells are pushed
  MlflowRun run(client, start);
  run.log_metrics(all_points(cell_dir, start_ms));
  for (const char* name : kRunArtifacts)
    if (fs::exists(cell_dir / name)) run.upload(cell_dir / name);
  run.end("FINISHED", now_ms());
  return {run.run_id(), false};
}

void push_cells(const fs::path& dir, const std::string& uri, std::ostream& out) {
  const std::vector<fs::path> cells = finished_cells(dir);
  if (cells.empty())
    throw std::runtime_error("nothing to push: " + dir.string() + " is neither a finished cell (summary.json) " +
                             "nor a sweep with finished cells (cells/<id>/summary.json)");
  for (const fs::path& cell : cells) {
    const std::string server = uri.empty() ? configured_uri(cell) : uri;
    if (server.empty())
      throw std::runtime_error("no MLflow server for cell " + cell.string() +
                               ": give --tracking URI or set tracking.mlflow in its config");
    PushResult pushed;
    try {
      pushed = push_cell(MlflowClient(server), cell);
    } catch (const TrackingError& e) {
      throw TrackingError("pushing cell " + cell.string() + " failed: " + e.what());
    }
    out << cell_name(cell) << ": " << (pushed.already_there ? "already on " : "pushed to ") << server << " (run "
        << pushed.run_id << ")\n";
  }
}

}  // namespace gradsweep::tracking
