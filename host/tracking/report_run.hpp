#pragma once
// A sweep's report as an MLflow run of its own (docs/results.md#mlflow): report.md, report.html,
// results.csv and the plots, in the sweep's experiment beside its cells' runs, so that whoever compares the
// cells in MLflow finds the comparison there too. One such run per sweep directory: a later report
// uploads its files into the same run, replacing those of the same name.
#include "tracking/mlflow_client.hpp"

#include <filesystem>
#include <string>

namespace gradsweep::tracking {

// The tag marking a sweep's report run; its value is the sweep directory's name.
inline constexpr const char* kReportTag = "gradsweep.report";

// The server the sweep's cells were tracked on (the tracking.mlflow of the first cell whose resolved config
// names one); "" when none does.
std::string sweep_tracking_uri(const std::filesystem::path& sweep_dir);

// Uploads the report's files of `sweep_dir` that exist to the sweep's report run, made (and ended FINISHED)
// when there is none yet; returns its id. Throws TrackingError, or std::runtime_error when the sweep has no
// report.md to send.
std::string push_report(const MlflowClient& client, const std::filesystem::path& sweep_dir);

}  // namespace gradsweep::tracking
