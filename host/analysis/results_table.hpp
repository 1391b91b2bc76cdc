#pragma once
// DIR/results.csv: one row per planned cell, with its id, every axis, its status (and reason), and
// every scalar of its summary.json flattened with dots ("comm.busy_s", "time_split_s.forward"); lists
// such as bytes_sent_per_step_by_rank are joined with ';'. The resolved configuration is left out (it
// is in cells/<id>/cell.yaml). Cells without a summary have empty metric columns.
#include "runs/plan_file.hpp"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace gradsweep::analysis {

struct ResultsTable {
  std::vector<std::string> columns;                      // id, axes..., status, reason, metrics...
  std::vector<std::map<std::string, std::string>> rows;  // column -> value, parallel to the plan's cells
  std::size_t first_metric_column = 0;
};

ResultsTable collect_results(const runs::SweepPlan& plan);

std::string to_csv(const ResultsTable& table);
// Atomically.
void write_results_csv(const ResultsTable& table, const std::filesystem::path& file);

// The metric columns that answer the sweep's question (speed, loss, traffic, memory), those the table has.
std::vector<std::string> headline_metrics(const ResultsTable& table);

// A markdown table of the axes, the status and the headline metrics.
std::string to_markdown(const ResultsTable& table);

}  // namespace gradsweep::analysis
