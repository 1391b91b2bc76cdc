#pragma once
// A finished cell replayed from its files to an MLflow server (`gradsweep report DIR --push`,
// docs/results.md#mlflow): the run the live path (train/mlflow_log.hpp) makes, built from the same
// cell_fields.hpp functions, for a cell whose server was down or not configured while it trained.
#include "tracking/mlflow_client.hpp"

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace gradsweep::tracking {

struct PushResult {
  std::string run_id;
  bool already_there = false;  // a FINISHED run with the cell's kCellTag was found; nothing was sent
};

// The finished cells under `dir`: `dir` itself when it holds summary.json, else its cells/<id>/ that do,
// by name.
std::vector<std::filesystem::path> finished_cells(const std::filesystem::path& dir);

// tracking.mlflow of the cell's config.resolved.yaml; "" when it names none.
std::string configured_uri(const std::filesystem::path& cell_dir);

// The cell's run on the server: an existing FINISHED one tagged kCellTag = cell_name(cell_dir) in the
// cell's experiment, else a new one made from its files and ended FINISHED. Throws TrackingError.
PushResult push_cell(const MlflowClient& client, const std::filesystem::path& cell_dir);

// Pushes every finished cell of `dir` to `uri`, or when empty to each cell's configured_uri; one line per
// cell to `out`. Throws (std::runtime_error, TrackingError) at the first cell without a server or whose
// server fails, naming the cell; the cells before it stay pushed, and a later push skips them.
void push_cells(const std::filesystem::path& dir, const std::string& uri, std::ostream& out);

}  // namespace gradsweep::tracking
