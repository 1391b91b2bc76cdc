#include "experiment/launch/run_order.hpp"

#include <algorithm>
#include <map>

namespace gradsweep::experiment {

std::vector<runs::PlannedCell> interleaved_order(const std::vector<runs::PlannedCell>& cells) {
  std::map<int, std::vector<const runs::PlannedCell*>> rounds;
  for (const auto& cell : cells) rounds[cell.repeat].push_back(&cell);
  std::vector<runs::PlannedCell> out;
  out.reserve(cells.size());
  int index = 0;
  for (auto& [round, members] : rounds) {
    if (index++ % 2 == 1) std::reverse(members.begin(), members.end());
    for (const runs::PlannedCell* c : members) out.push_back(*c);
  }
  return out;
}

}  // namespace gradsweep::experiment
