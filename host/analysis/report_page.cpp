#include "analysis/report_page.hpp"

#include "report_page_assets.hpp"  // generated at build time (CMakeLists.txt)

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <set>

namespace gradsweep::analysis {
namespace fs = std::filesystem;
namespace {

using nlohmann::json;

const std::string& value(const std::map<std::string, std::string>& row, const std::string& column) {
  static const std::string none;
  const auto it = row.find(column);
  return it == row.end() ? none : it->second;
}

bool unfinished_failure(const std::string& status) {
  return status == "failed" || status == "timeout" || status == "interrupted";
}

// The cell's id and group, round when the sweep repeats, status, then report.md's metric columns. Why a cell
// failed is in the page's list of failed cells, which keeps this table narrow.
json results(const ResultsTable& table) {
  std::vector<std::string> columns{"id", "group"};
  bool repeats = false;
  for (const auto& row : table.rows) repeats = repeats || (!value(row, "round").empty() && value(row, "round") != "0");
  if (repeats) columns.push_back("round");
  columns.push_back("status");
  for (const auto& metric : headline_metrics(table)) columns.push_back(metric);
  json rows = json::array(), ids = json::array();
  for (const auto& row : table.rows) {
    json cells = json::array();
    for (const auto& column : columns) cells.push_back(value(row, column));
    rows.push_back(std::move(cells));
    ids.push_back(value(row, "id"));
  }
  return {{"columns", columns}, {"rows", rows}, {"ids", ids}};
}

json failed_cells(const ResultsTable& table) {
  json out = json::array();
  for (const auto& row : table.rows)
    if (unfinished_failure(value(row, "status")))
      out.push_back({{"id", value(row, "id")},
                     {"group", value(row, "group")},
                     {"status", value(row, "status")},
                     {"failure", value(row, "failure")},
                     {"reason", value(row, "reason")}});
  return out;
}

// JSON has no NaN: a missing value is null, which Chart.js leaves as a gap.
json number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json pairs(const std::vector<std::pair<double, double>>& points) {
  json out = json::array();
  for (const auto& [a, b] : points) out.push_back({number(a), number(b)});
  return out;
}

json chart_json(const Chart& chart) {
  json series = json::array();
  for (const auto& s : chart.series)
    series.push_back({{"title", s.title},
                      {"colour_key", s.colour_key},
                      {"style", s.style},
                      {"points", pairs(s.points)},
                      {"errors", pairs(s.errors)},
                      {"cells", s.cells}});
  // A stacked chart's bars are cells: every layer lists them in bar order.
  std::vector<std::string> bar_cells;
  if (chart.stacked && !chart.series.empty()) bar_cells = chart.series.front().cells;
  bar_cells.resize(chart.bar_labels.size());
  return {{"id", chart.stem},
          {"title", chart.title},
          {"xlabel", chart.xlabel},
          {"ylabel", chart.ylabel},
          {"points", chart.points},
          {"integer_x", chart.integer_x},
          {"y_from_zero", chart.y_from_zero},
          {"log_x", chart.log_x},
          {"stacked", chart.stacked},
          {"bar_labels", chart.bar_labels},
          {"bar_cells", bar_cells},
          {"series", series}};
}

json section_json(const ReportSection& s) {
  return {{"heading", s.heading}, {"intro", s.intro}, {"columns", s.columns}, {"rows", s.rows}, {"note", s.note}};
}

// Colour keys in order of first appearance, so that the first strategy gets the first colour everywhere.
json colour_keys(const std::vector<Chart>& charts) {
  json keys = json::array();
  std::set<std::string> seen;
  for (const auto& chart : charts)
    for (const auto& s : chart.series)
      if (!s.colour_key.empty() && seen.insert(s.colour_key).second) keys.push_back(s.colour_key);
  return keys;
}

// Relative links to the traces the cells wrote, so that the page works wherever DIR is copied.
json traces(const runs::SweepPlan& plan) {
  json out = json::object();
  for (const auto& cell : plan.cells)
    if (fs::exists(cell.dir / "trace.json")) {
      const fs::path relative = (cell.dir / "trace.json").lexically_relative(plan.out_dir);
      out[cell.id] = relative.empty() ? "cells/" + cell.id + "/trace.json" : relative.generic_string();
    }
  return out;
}

// Inside <script>, "</" would end the element early: JSON allows "<\/" for it.
std::string script_safe(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') out += '\\';
  }
  return out;
}

std::string html_escaped(const std::string& text) {
  std::string out;
  for (const char c : text) out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return out;
}

}  // namespace

std::string report_page_html(const runs::SweepPlan& plan, const ResultsTable& table, const ReportPageContent& content) {
  json sections = json::array();
  for (const auto& s : content.sections) sections.push_back(section_json(s));
  json charts = json::array();
  for (const auto& c : content.charts) charts.push_back(chart_json(c));
  const json data{{"name", plan.name},
                  {"summary", content.summary},
                  {"warnings", content.warnings},
                  {"failed", failed_cells(table)},
                  {"results", results(table)},
                  {"sections", sections},
                  {"charts", charts},
                  {"colour_keys", colour_keys(content.charts)},
                  {"colour_by", content.colour_by},
                  {"traces", traces(plan)}};
  // dump's replacement of invalid UTF-8 keeps a stray byte in a log-derived reason from costing the page.
  const std::string blob = data.dump(-1, ' ', false, json::error_handler_t::replace);
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>Experiment " +
         html_escaped(plan.name) + "</title>\n<style>\n" + page_assets::kPageCss + "</style>\n</head>\n<body>\n" +
         "<main id=\"report\"></main>\n<script>\n" + page_assets::kErrorsJs +
         "</script>\n<script type=\"application/json\" id=\"report-data\">" + script_safe(blob) +
         "</script>\n<script>\n" + page_assets::kChartJs + "\n</script>\n<script>\n" + page_assets::kPageJs +
         "</script>\n</body>\n</html>\n";
}

}  // namespace gradsweep::analysis
