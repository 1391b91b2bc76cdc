#pragma once
// One section of a sweep's report as text: report.md renders it as markdown, report.html (report_page.hpp)
// as HTML, so that both show the same figures from the same code. Text may use markdown's **bold** and
// `code`, which the page renders too.
#include <string>
#include <vector>

namespace gradsweep::analysis {

struct ReportSection {
  std::string heading;  // "Comparison with the baseline"
  std::string intro;    // the paragraph before the table
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;  // parallel to columns
  std::string note;                            // the paragraph after the table ("" = none)
};

// "## heading", the intro, the table (cells' '|' written as '/'), the note.
std::string section_markdown(const ReportSection& section);

}  // namespace gradsweep::analysis
