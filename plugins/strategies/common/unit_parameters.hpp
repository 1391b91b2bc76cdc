#pragma once
// Which model parameters each unit (SDK 1.4 ModelUnit) holds, for the strategies that act per unit
// (fsdp, hsdp): the declared units' parameter indices in their order, then the root's (those in no unit).
#include <gradsweep/sdk/strategy.hpp>

#include <cstddef>
#include <vector>

namespace gradsweep::strategies {

inline std::vector<std::vector<std::size_t>> unit_parameters(const sdk::StrategySetup& setup) {
  std::vector<std::vector<std::size_t>> groups(setup.units.size() + 1);
  std::vector<char> claimed(setup.parameters.size(), 0);
  for (std::size_t u = 0; u < setup.units.size(); ++u)
    for (std::size_t i : setup.units[u].parameters) {
      claimed.at(i) = 1;  // at(): an index out of range is the model's error
      groups[u].push_back(i);
    }
  for (std::size_t i = 0; i < setup.parameters.size(); ++i)
    if (!claimed[i]) groups.back().push_back(i);
  return groups;
}

}  // namespace gradsweep::strategies
