#include "analysis/results_table.hpp"

#include "runs/cell_status.hpp"
#include "util/atomic_file.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>

namespace gradsweep::analysis {
namespace {

std::string scalar_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  if (v.is_number_float()) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.6g", v.get<double>());
    return buffer;
  }
  return v.dump();
}

void flatten(const nlohmann::json& j, const std::string& prefix, std::map<std::string, std::string>& row,
             std::vector<std::string>& order) {
  for (const auto& [key, value] : j.items()) {
    const std::string name = prefix.empty() ? key : prefix + "." + key;
    if (prefix.empty() && key == "config") continue;
    if (value.is_object()) {
      flatten(value, name, row, order);
      continue;
    }
    std::string text;
    if (value.is_array()) {
      for (const auto& item : value) text += (text.empty() ? "" : ";") + scalar_text(item);
    } else {
      text = scalar_text(value);
    }
    if (!row.count(name)) order.push_back(name);
    row[name] = text;
  }
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (const char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

ResultsTable collect_results(const runs::SweepPlan& plan) {
  ResultsTable table;
  table.columns.push_back("id");
  for (const auto& axis : plan.axes) table.columns.push_back(axis);
  table.columns.push_back("status");
  table.columns.push_back("failure");  // before reason: report.md's table shows the columns up to reason
  table.columns.push_back("reason");
  table.first_metric_column = table.columns.size();
  std::vector<std::string> metric_order;
  std::set<std::string> seen(table.columns.begin(), table.columns.end());
  seen.insert("resized");
  bool any_resized = false;
  for (const auto& cell : plan.cells) {
    std::map<std::string, std::string> row;
    row["id"] = cell.id;
    for (const auto& [k, v] : cell.axes) row[k] = v;
    const runs::CellStatus status = runs::read_cell_status(cell.dir);
    // A cell whose configuration changed since its status was written is pending, not done.
    const bool current = status.config_hash.empty() || status.config_hash == cell.config_hash;
    row["status"] = current ? to_string(status.state) : "pending";
    row["reason"] = current ? status.reason : "configuration changed since the last run";
    row["failure"] = current ? status.failure : "";
    std::ifstream in(cell.dir / "summary.json");
    if (in && current) {
      try {
        std::map<std::string, std::string> metrics;
        std::vector<std::string> order;
        const nlohmann::json summary = nlohmann::json::parse(in);
        if (std::string resized = runs::resized_text(cell, status, summary); !resized.empty()) {
          row["resized"] = std::move(resized);
          any_resized = true;
        }
        flatten(summary, "", metrics, order);
        for (const auto& name : order) {
          // A summary key named like an axis or "status" keeps its own column under "summary.".
          const std::string column = (row.count(name) && name != "id") || name == "status" ? "summary." + name : name;
          row[column] = metrics[name];
          if (seen.insert(column).second) metric_order.push_back(column);
        }
      } catch (const std::exception&) {
      }
    }
    table.rows.push_back(std::move(row));
  }
  // A cell that changed size mid-run is marked where it cannot be missed, beside its status; the column is there
  // only when some cell did, since every other sweep would carry it empty.
  if (any_resized) {
    table.columns.insert(table.columns.begin() + static_cast<std::ptrdiff_t>(table.first_metric_column) - 1, "resized");
    ++table.first_metric_column;
  }
  table.columns.insert(table.columns.end(), metric_order.begin(), metric_order.end());
  return table;
}

std::string to_csv(const ResultsTable& table) {
  std::string out;
  for (std::size_t c = 0; c < table.columns.size(); ++c) out += (c ? "," : "") + csv_field(table.columns[c]);
  out += "\n";
  for (const auto& row : table.rows) {
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
      const auto it = row.find(table.columns[c]);
      out += (c ? "," : "") + csv_field(it == row.end() ? "" : it->second);
    }
    out += "\n";
  }
  return out;
}

void write_results_csv(const ResultsTable& table, const std::filesystem::path& file) {
  util::write_file_atomically(file, to_csv(table));
}

std::vector<std::string> headline_metrics(const ResultsTable& table) {
  std::vector<std::string> columns;
  for (const char* metric : {"world_size", "tokens_per_sec", "step_time_s", "final_train_loss", "val_loss", "val_ppl",
                             "bytes_sent_per_step", "peak_rss_mb", "mfu"})
    if (std::find(table.columns.begin(), table.columns.end(), metric) != table.columns.end()) columns.push_back(metric);
  return columns;
}

std::string to_markdown(const ResultsTable& table) {
  std::vector<std::string> columns(table.columns.begin(), table.columns.begin() + table.first_metric_column - 1);
  for (const auto& metric : headline_metrics(table)) columns.push_back(metric);
  std::string out = "|";
  for (const auto& c : columns) out += " " + c + " |";
  out += "\n|";
  for (std::size_t i = 0; i < columns.size(); ++i) out += "---|";
  out += "\n";
  for (const auto& row : table.rows) {
    out += "|";
    for (const auto& c : columns) {
      const auto it = row.find(c);
      std::string v = it == row.end() ? "" : it->second;
      std::replace(v.begin(), v.end(), '|', '/');
      out += " " + v + " |";
    }
    out += "\n";
  }
  return out;
}

}  // namespace gradsweep::analysis
