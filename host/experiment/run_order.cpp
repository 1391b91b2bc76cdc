#include "experiment/run_order.hpp"

#include <algorithm>
#include <map>

namespace gradsweep::experiment {

std::vector<PlannedCell> interleaved_order(const std::vector<PlannedCell>& cells) {
  std::map<int, std::vector<const PlannedCell*>> rounds;
  for (const auto& cell : cells) rounds[cell.repeat].push_back(&cell);
  std::vector<PlannedCell> out;
  out.reserve(cells.size());
  int index = 0;
  for (auto& [round, members] : rounds) {
    if (index++ % 2 == 1) std::reverse(members.begin(), members.end());
    for (const PlannedCell* c : members) out.push_back(*c);
  }
  return out;
}

}  // namespace gradsweep::experiment
