#include "conformance/kit_report.hpp"

#include <algorithm>
#include <cstdio>
#include <iomanip>

namespace gradsweep::conformance {

const char* to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::Pass: return "PASS";
    case Verdict::Fail: return "FAIL";
    case Verdict::Skip: return "SKIP";
  }
  return "?";
}

bool KitReport::passed() const {
  return std::none_of(findings.begin(), findings.end(), [](const Finding& f) { return f.verdict == Verdict::Fail; });
}

std::string short_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

void print_table(const KitReport& report, std::ostream& out) {
  std::size_t width = 8;
  for (const auto& f : report.findings) width = std::max(width, f.property.size());
  out << "strategy '" << report.strategy << "'";
  for (const auto& o : report.options) out << " --set " << o;
  out << ": " << report.steps << " steps against '" << report.reference << "'\n";
  out << std::left << std::setw(static_cast<int>(width) + 2) << "property" << std::setw(7) << "ranks" << std::setw(6)
      << ""
      << "figure / reason\n";
  for (const auto& f : report.findings) {
    std::string detail = f.figure;
    if (!f.reason.empty()) detail += (detail.empty() ? "" : "; ") + f.reason;
    out << std::setw(static_cast<int>(width) + 2) << f.property << std::setw(7)
        << (f.ranks > 0 ? std::to_string(f.ranks) : "-") << std::setw(6) << to_string(f.verdict) << detail << "\n";
  }
  const auto count = [&](Verdict v) {
    return std::count_if(report.findings.begin(), report.findings.end(),
                         [v](const Finding& f) { return f.verdict == v; });
  };
  out << (report.passed() ? "PASSED" : "FAILED") << ": " << count(Verdict::Pass) << " passed, " << count(Verdict::Fail)
      << " failed, " << count(Verdict::Skip) << " skipped in " << short_number(report.seconds) << " s";
  if (!report.workspace.empty()) out << " (jobs kept in " << report.workspace << ")";
  out << "\n";
}

nlohmann::json to_json(const KitReport& report) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : report.findings)
    findings.push_back({{"property", f.property},
                        {"ranks", f.ranks},
                        {"verdict", to_string(f.verdict)},
                        {"figure", f.figure},
                        {"reason", f.reason}});
  return {{"strategy", report.strategy},   {"options", report.options}, {"reference", report.reference},
          {"steps", report.steps},         {"passed", report.passed()}, {"seconds", report.seconds},
          {"workspace", report.workspace}, {"findings", findings}};
}

}  // namespace gradsweep::conformance
