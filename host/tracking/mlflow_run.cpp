#include "tracking/mlflow_run.hpp"

#include <algorithm>
#include <chrono>

namespace gradsweep::tracking {
namespace {
// MLflow's limits per log-batch request.
constexpr std::size_t kMaxMetrics = 1000, kMaxParams = 100, kMaxTags = 100;
// MLflow refuses longer parameter values (6000 characters since 2.x).
constexpr std::size_t kMaxParamValue = 6000;
constexpr const char* kServedArtifacts = "mlflow-artifacts:/";

nlohmann::json key_values(Fields::const_iterator begin, Fields::const_iterator end, std::size_t max_value) {
  nlohmann::json out = nlohmann::json::array();
  for (auto it = begin; it != end; ++it)
    out.push_back({{"key", it->first}, {"value", it->second.substr(0, max_value)}});
  return out;
}
}  // namespace

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

MlflowRun::MlflowRun(MlflowClient client, const RunStart& start) : client_(std::move(client)) {
  const std::string experiment_id = client_.experiment_id(start.experiment);
  const nlohmann::json run = client_.post(
      "runs/create", {{"experiment_id", experiment_id}, {"run_name", start.run_name}, {"start_time", start.start_ms}});
  run_id_ = run.at("run").at("info").at("run_id").get<std::string>();
  artifact_uri_ = run["run"]["info"].value("artifact_uri", "");
  for (std::size_t i = 0; i < start.params.size(); i += kMaxParams) {
    const auto begin = start.params.begin() + static_cast<std::ptrdiff_t>(i);
    const auto end = start.params.begin() + static_cast<std::ptrdiff_t>(std::min(i + kMaxParams, start.params.size()));
    log_batch({{"params", key_values(begin, end, kMaxParamValue)}});
  }
  set_tags(start.tags);
}

MlflowRun::MlflowRun(MlflowClient client, std::string run_id, std::string artifact_uri)
    : client_(std::move(client)), run_id_(std::move(run_id)), artifact_uri_(std::move(artifact_uri)) {}

void MlflowRun::log_batch(nlohmann::json body) {
  body["run_id"] = run_id_;
  client_.post("runs/log-batch", body);
}

void MlflowRun::log_metrics(const std::vector<MetricPoint>& points) {
  for (std::size_t i = 0; i < points.size(); i += kMaxMetrics) {
    nlohmann::json metrics = nlohmann::json::array();
    for (std::size_t j = i; j < std::min(i + kMaxMetrics, points.size()); ++j)
      metrics.push_back({{"key", points[j].key},
                         {"value", points[j].value},
                         {"timestamp", points[j].timestamp_ms},
                         {"step", points[j].step}});
    log_batch({{"metrics", metrics}});
  }
}

void MlflowRun::set_tags(const Fields& tags) {
  for (std::size_t i = 0; i < tags.size(); i += kMaxTags) {
    const auto begin = tags.begin() + static_cast<std::ptrdiff_t>(i);
    const auto end = tags.begin() + static_cast<std::ptrdiff_t>(std::min(i + kMaxTags, tags.size()));
    log_batch({{"tags", key_values(begin, end, kMaxParamValue)}});
  }
}

bool MlflowRun::upload(const std::filesystem::path& file, const std::string& folder) {
  if (artifact_uri_.rfind(kServedArtifacts, 0) != 0) return false;
  std::string root = artifact_uri_.substr(std::string(kServedArtifacts).size());
  while (!root.empty() && root.front() == '/') root.erase(0, 1);
  client_.put_artifact(root + "/" + (folder.empty() ? "" : folder + "/") + file.filename().string(), file);
  return true;
}

void MlflowRun::end(const std::string& status, std::int64_t end_ms) {
  client_.post("runs/update", {{"run_id", run_id_}, {"status", status}, {"end_time", end_ms}});
}

}  // namespace gradsweep::tracking
