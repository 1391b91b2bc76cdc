#include "analysis/report_section.hpp"

#include <algorithm>

namespace gradsweep::analysis {
namespace {

std::string markdown_row(std::vector<std::string> cells) {
  std::string row = "|";
  for (auto& cell : cells) {
    std::replace(cell.begin(), cell.end(), '|', '/');
    row += " " + cell + " |";
  }
  return row + "\n";
}

}  // namespace

std::string section_markdown(const ReportSection& section) {
  std::string md = "## " + section.heading + "\n\n";
  if (!section.intro.empty()) md += section.intro + "\n\n";
  if (!section.columns.empty()) {
    md += markdown_row(section.columns) + "|";
    for (std::size_t i = 0; i < section.columns.size(); ++i) md += "---|";
    md += "\n";
    for (const auto& row : section.rows) md += markdown_row(row);
    md += "\n";
  }
  if (!section.note.empty()) md += section.note + "\n\n";
  return md;
}

}  // namespace gradsweep::analysis
