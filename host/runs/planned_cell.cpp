#include "runs/planned_cell.hpp"

namespace gradsweep::runs {

std::string axes_text(const PlannedCell& cell) {
  std::string text;
  for (const auto& [k, v] : cell.axes) text += (text.empty() ? "" : " ") + k + "=" + v;
  return text;
}

}  // namespace gradsweep::runs
