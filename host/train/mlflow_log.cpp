#include "train/mlflow_log.hpp"

#include "tracking/cell_fields.hpp"

#include <spdlog/spdlog.h>

namespace gradsweep::train {
namespace fs = std::filesystem;

namespace {
// Lines per request: few enough requests that a slow server costs training little, often enough that a
// dashboard follows a long run.
constexpr std::int64_t kFlushLines = 50;
}  // namespace

template <class Call>
void MlflowLog::guarded(Call&& call) {
  if (!run_) return;
  try {
    call(*run_);
  } catch (const std::exception& e) {
    spdlog::warn("MLflow tracking stops for this cell: {}; training goes on, its files are unaffected", e.what());
    run_.reset();
  }
}

MlflowLog::MlflowLog(const fs::path& out_dir, const std::string& uri, bool enabled, const YAML::Node& resolved,
                     int world_size)
    : out_dir_(out_dir) {
  if (!enabled || uri.empty()) return;
  tracking::RunStart start{tracking::experiment_name(out_dir), tracking::cell_name(out_dir), tracking::now_ms(),
                           tracking::config_params(resolved), tracking::cell_tags(resolved, world_size, out_dir)};
  start.tags.emplace_back("status", "running");
  try {
    run_.emplace(tracking::MlflowClient(uri), start);
  } catch (const std::exception& e) {
    spdlog::warn("no MLflow run for this cell: {}; training goes on, its files are unaffected", e.what());
  }
}

MlflowLog::~MlflowLog() {
  if (finished_) return;
  flush();
  guarded([](tracking::MlflowRun& r) {
    r.set_tags({{"status", "failed"}});
    r.end("FAILED", tracking::now_ms());
  });
}

void MlflowLog::flush() {
  if (pending_.empty()) return;
  guarded([&](tracking::MlflowRun& r) { r.log_metrics(pending_); });
  pending_.clear();
  pending_lines_ = 0;
}

void MlflowLog::write_step(const nlohmann::json& line) {
  if (line.is_null() || !run_) return;
  std::vector<tracking::MetricPoint> points = tracking::metric_points(line, tracking::now_ms());
  pending_.insert(pending_.end(), points.begin(), points.end());
  if (++pending_lines_ >= kFlushLines) flush();
}

void MlflowLog::finish(const std::string& status) {
  finished_ = true;
  flush();
  guarded([&](tracking::MlflowRun& r) {
    r.set_tags({{"status", status == "FINISHED" ? "done" : "interrupted"}});
    if (status == "FINISHED")
      for (const char* name : tracking::kRunArtifacts)
        if (fs::exists(out_dir_ / name)) r.upload(out_dir_ / name);
    r.end(status, tracking::now_ms());
  });
}

}  // namespace gradsweep::train
