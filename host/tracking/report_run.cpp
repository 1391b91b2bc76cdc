#include "tracking/report_run.hpp"

#include "tracking/cell_fields.hpp"
#include "tracking/cell_replay.hpp"
#include "tracking/mlflow_run.hpp"

#include <algorithm>
#include <vector>

namespace gradsweep::tracking {
namespace fs = std::filesystem;

namespace {
constexpr const char* kReportFiles[] = {"report.md", "report.html", "results.csv"};

std::vector<fs::path> cell_dirs(const fs::path& sweep_dir) {
  std::vector<fs::path> cells;
  if (fs::is_directory(sweep_dir / "cells"))
    for (const auto& entry : fs::directory_iterator(sweep_dir / "cells"))
      if (entry.is_directory()) cells.push_back(entry.path());
  std::sort(cells.begin(), cells.end());
  return cells;
}

// The experiment of the sweep's cells (each cell's sweep_name.txt holds the same name).
std::string sweep_experiment(const fs::path& sweep_dir) {
  for (const fs::path& cell : cell_dirs(sweep_dir))
    if (fs::exists(cell / kSweepNameFile)) return experiment_name(cell);
  return kDefaultExperiment;
}

std::string directory_name(const fs::path& dir) {
  const fs::path normal = fs::absolute(dir).lexically_normal();
  return (normal.has_filename() ? normal : normal.parent_path()).filename().string();
}

// The report run of `sweep` in the experiment, when one is there.
nlohmann::json existing_report_run(const MlflowClient& client, const std::string& experiment_id,
                                   const std::string& sweep) {
  const nlohmann::json found =
      client.post("runs/search", {{"experiment_ids", {experiment_id}},
                                  {"filter", std::string("tags.`") + kReportTag + "` = '" + sweep + "'"},
                                  {"max_results", 1}});
  const nlohmann::json runs = found.value("runs", nlohmann::json::array());
  return runs.empty() ? nlohmann::json() : runs[0]["info"];
}
}  // namespace

std::string sweep_tracking_uri(const fs::path& sweep_dir) {
  for (const fs::path& cell : cell_dirs(sweep_dir))
    if (fs::exists(cell / "config.resolved.yaml"))
      if (std::string uri = configured_uri(cell); !uri.empty()) return uri;
  return "";
}

std::string push_report(const MlflowClient& client, const fs::path& sweep_dir) {
  if (!fs::exists(sweep_dir / "report.md"))
    throw std::runtime_error("no report to push in " + sweep_dir.string() + ": run `gradsweep report " +
                             sweep_dir.string() + "` first");
  const std::string experiment = sweep_experiment(sweep_dir), sweep = directory_name(sweep_dir);
  const nlohmann::json found = existing_report_run(client, client.experiment_id(experiment), sweep);
  const bool made = found.is_null();
  MlflowRun run = made
                      ? MlflowRun(client, RunStart{experiment, "report: " + sweep, now_ms(), {}, {{kReportTag, sweep}}})
                      : MlflowRun(client, found.value("run_id", ""), found.value("artifact_uri", ""));
  for (const char* name : kReportFiles)
    if (fs::exists(sweep_dir / name)) run.upload(sweep_dir / name);
  if (fs::is_directory(sweep_dir / "plots"))
    for (const auto& entry : fs::directory_iterator(sweep_dir / "plots"))
      if (entry.is_regular_file()) run.upload(entry.path(), "plots");
  if (made) run.end("FINISHED", now_ms());
  return run.run_id();
}

}  // namespace gradsweep::tracking
