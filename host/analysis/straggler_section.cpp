#include "analysis/straggler_section.hpp"

#include <cstdio>
#include <string>

namespace gradsweep::analysis {
namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

// "1.8 (rank 3)" when `index` is above `above`, else "".
std::string named(const nlohmann::json& breakdown, const char* index, const char* who, double above) {
  const nlohmann::json& value = breakdown.value(index, nlohmann::json());
  if (!value.is_number() || value.get<double>() <= above) return "";
  std::string text = number(value.get<double>());
  if (breakdown.value(who, nlohmann::json()).is_number())
    text += " (rank " + std::to_string(breakdown[who].get<int>()) + ")";
  return text;
}

}  // namespace

std::optional<ReportSection> straggler_section(const runs::SweepPlan& plan, const Comparison& c) {
  ReportSection section{"Stragglers",
                        "Cells in which one rank computed more than " + number(kComputeStragglerAbove) +
                            " times as long as the median rank, or one node's link took more than " +
                            number(kLinkStragglerAbove) +
                            " times as long as the median node's in the link probe (gradsweep's docs/results.md "
                            "says how each is measured). Their step times include waiting for it.",
                        {"cell", "group", "compute straggler index", "link straggler index", "slow link's host"},
                        {},
                        ""};
  for (std::size_t i = 0; i < plan.cells.size(); ++i) {
    const CellOutcome& cell = c.cells[i];
    if (!cell.ok || !cell.summary.contains("step_breakdown")) continue;
    const nlohmann::json& b = cell.summary["step_breakdown"];
    const std::string compute = named(b, "straggler_index", "slowest_rank", kComputeStragglerAbove);
    const std::string link = named(b, "link_straggler_index", "slow_link_rank", kLinkStragglerAbove);
    if (compute.empty() && link.empty()) continue;
    const nlohmann::json host = b.value("slow_link_host", nlohmann::json());
    section.rows.push_back({plan.cells[i].id, c.groups[static_cast<std::size_t>(cell.group)].label, compute, link,
                            link.empty() || !host.is_string() ? "" : host.get<std::string>()});
  }
  if (section.rows.empty()) return std::nullopt;
  return section;
}

}  // namespace gradsweep::analysis
