#pragma once
// One MLflow run (docs/results.md#mlflow): made in an experiment with its parameters and tags, fed
// metric points in batches, given artifacts, and ended with a status. Every call goes through
// MlflowClient, so every failure is a TrackingError naming the server and the call.
#include "tracking/mlflow_client.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace gradsweep::tracking {

using Fields = std::vector<std::pair<std::string, std::string>>;

struct MetricPoint {
  std::string key;
  double value = 0;
  std::int64_t timestamp_ms = 0;
  std::int64_t step = 0;
};

struct RunStart {
  std::string experiment;  // the sweep's name; "gradsweep" for a cell trained by hand
  std::string run_name;    // the cell's directory name
  std::int64_t start_ms = 0;
  Fields params;  // the resolved config, dotted keys
  Fields tags;
};

// Milliseconds since the epoch, MLflow's timestamps.
std::int64_t now_ms();

class MlflowRun {
 public:
  // Makes the experiment when it is new, the run, and logs the parameters and tags.
  MlflowRun(MlflowClient client, const RunStart& start);
  // A run that is already there (found by runs/search): its id and artifact URI.
  MlflowRun(MlflowClient client, std::string run_id, std::string artifact_uri);

  const std::string& run_id() const { return run_id_; }
  const MlflowClient& client() const { return client_; }

  // In batches of MLflow's limit (1000 points per request).
  void log_metrics(const std::vector<MetricPoint>& points);
  void set_tags(const Fields& tags);
  // Uploads `file` under the run's artifacts, when the server serves them (an artifact URI of
  // mlflow-artifacts:/...); false when it stores them where only it can write, and nothing is sent.
  // `folder` is the place under the artifacts' root ("plots"; "" for the root itself).
  bool upload(const std::filesystem::path& file, const std::string& folder = "");
  // `status`: FINISHED, FAILED or KILLED.
  void end(const std::string& status, std::int64_t end_ms);

 private:
  void log_batch(nlohmann::json body);
  MlflowClient client_;
  std::string run_id_;
  std::string artifact_uri_;
};

}  // namespace gradsweep::tracking
