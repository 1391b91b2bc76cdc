#include "plugins/rank_duties.hpp"

#include <stdexcept>
#include <string>

namespace gradsweep::plugins {
namespace {

// The minor from which capabilities, not role(), say who computes and who hears unit events.
constexpr std::uint32_t kDeclaredDuties = 9;

// role() of a plugin built before 1.9; 1.0 has none (every rank computes).
sdk::RankRole role_of(const StrategyInstance& strategy) {
  sdk::RankRole role;
  strategy.call_if_present<&sdk::StrategyAbi::role>(&role);
  return role;
}

}  // namespace

bool computes_by_plan(const PlanVerdict& verdict, int rank, int world) {
  return rank >= world - verdict.computing_ranks;
}

bool hears_unit_events(const StrategyInstance& strategy) {
  if (strategy.abi_minor() >= kDeclaredDuties) {
    const auto declared = declared_capabilities(strategy.record());
    return declared && declared->unit_events;
  }
  // RankRole::unit_events was appended in 1.4: an older plugin's role() never wrote it.
  return strategy.has<&sdk::StrategyAbi::unit_event>() && role_of(strategy).unit_events;
}

RankDuties rank_duties(const StrategyInstance& strategy, const PlanVerdict& verdict, int rank, int world) {
  RankDuties duties;
  duties.unit_events = hears_unit_events(strategy);
  if (strategy.abi_minor() >= kDeclaredDuties) {
    duties.computes = computes_by_plan(verdict, rank, world);
    return duties;
  }
  duties.computes = role_of(strategy).computes;
  if (verdict.answered && duties.computes != computes_by_plan(verdict, rank, world))
    throw std::runtime_error("strategy '" + strategy.record().name + "' (SDK 1." +
                             std::to_string(strategy.abi_minor()) + "): its role() says rank " + std::to_string(rank) +
                             (duties.computes ? " computes" : " does not compute") + ", but its check_plan says " +
                             std::to_string(verdict.computing_ranks) + " of " + std::to_string(world) +
                             " ranks compute (the lowest ranks serve): a bug in the plugin");
  return duties;
}

}  // namespace gradsweep::plugins
