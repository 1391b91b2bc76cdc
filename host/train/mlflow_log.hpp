#pragma once
// A cell's MLflow run (docs/results.md#mlflow), kept by rank 0 when tracking.mlflow names a server: the
// run starts with the resolved config as parameters, metrics.jsonl's lines go to it in batches, and its
// end sets the status and uploads summary.json, trace.json and config.resolved.yaml. Tracking is a
// convenience: the first failed call (a server down, a refused request) logs one warning naming the
// server and the call, and nothing more is sent for this cell; training and its files are unaffected.
#include "tracking/mlflow_run.hpp"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gradsweep::train {

class MlflowLog {
 public:
  // Only with a non-empty `uri` on rank 0 (`enabled`) is anything sent.
  MlflowLog(const std::filesystem::path& out_dir, const std::string& uri, bool enabled, const YAML::Node& resolved,
            int world_size);
  // A run neither finished nor interrupted ended by an error: it is marked FAILED.
  ~MlflowLog();
  MlflowLog(const MlflowLog&) = delete;
  MlflowLog& operator=(const MlflowLog&) = delete;

  // One metrics.jsonl line (null on ranks that write none); sent every kFlushLines lines.
  void write_step(const nlohmann::json& line);
  // The run's end: what is left of the metrics, the status tag and, after a finished run, the artifacts.
  // `status`: FINISHED, or KILLED for a run interrupted on purpose (--stop-after).
  void finish(const std::string& status);

 private:
  template <class Call>
  void guarded(Call&& call);
  void flush();
  std::filesystem::path out_dir_;
  std::optional<tracking::MlflowRun> run_;
  std::vector<tracking::MetricPoint> pending_;
  std::int64_t pending_lines_ = 0;
  bool finished_ = false;
};

}  // namespace gradsweep::train
