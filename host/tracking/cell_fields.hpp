#pragma once
// What a cell gives its MLflow run (docs/results.md#mlflow), the same live (train/mlflow_log.hpp) and
// when replayed from its files (cell_replay.hpp): parameters from the resolved config, tags, metric
// points from metrics.jsonl lines, and the experiment's name.
#include "tracking/mlflow_run.hpp"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <string>

namespace gradsweep::tracking {

// The experiment of a cell trained by hand (no sweep name beside it).
inline constexpr const char* kDefaultExperiment = "gradsweep";
// DIR/cells/<id>/sweep_name.txt: the experiment file's name, written by `gradsweep run` for each cell.
inline constexpr const char* kSweepNameFile = "sweep_name.txt";

// The tag naming a run's cell directory: a push (cell_replay.hpp) finds a cell already sent by it.
inline constexpr const char* kCellTag = "gradsweep.cell";
// What a finished run uploads, when the files exist.
inline constexpr const char* kRunArtifacts[] = {"summary.json", "trace.json", "config.resolved.yaml"};

// The cell directory's own name ("cell-a" for cell-a/ and cell-a), the run's name and its kCellTag.
std::string cell_name(const std::filesystem::path& cell_dir);

void write_sweep_name(const std::filesystem::path& cell_dir, const std::string& name);
// The name in the cell's sweep_name.txt, else kDefaultExperiment.
std::string experiment_name(const std::filesystem::path& cell_dir);

// Every scalar of the config under its dotted key ("train.lr"); a list as its YAML flow text.
Fields config_params(const YAML::Node& resolved);

// strategy, model, world_size, kCellTag, and gradsweep.commit when the cell has a provenance.json.
Fields cell_tags(const YAML::Node& resolved, int world_size, const std::filesystem::path& cell_dir);

// The numbers of one metrics.jsonl line as points at its "step": a nested key joined with "." and an array
// index likewise ("time_s.forward", "comm.0.bytes"); bools as 0/1, nulls (non-finite numbers) left out.
std::vector<MetricPoint> metric_points(const nlohmann::json& line, std::int64_t timestamp_ms);

}  // namespace gradsweep::tracking
