#pragma once
// What one rank of a strategy does in the job: whether it computes (runs forward and backward, takes a share
// of each global batch) and whether the strategy hears unit events. One answer, by the plugin's SDK:
//   1.9 and later: who computes is the plan answer's computing_ranks (PlanVerdict; the lowest world -
//                  computing_ranks ranks only serve), unit events are a declared capability; role() is
//                  never called.
//   1.1 to 1.8:    role(); where check_plan answered too (1.4 and later), role's `computes` must agree with
//                  it, or the job stops with an error naming the plugin. Unit events from 1.4.
//   1.0:           every rank computes, no unit events.
// The planner and the projection read the same computing_ranks (plan.json), so all three agree.
#include "plugins/plugin_declarations.hpp"
#include "plugins/plugin_instance.hpp"

namespace gradsweep::plugins {

struct RankDuties {
  bool computes = true;
  bool unit_events = false;
};

// Whether rank `rank` of a job of `world` ranks computes, by the plan answer alone.
bool computes_by_plan(const PlanVerdict& verdict, int rank, int world);

RankDuties rank_duties(const StrategyInstance& strategy, const PlanVerdict& verdict, int rank, int world);

// Whether the strategy hears unit events and hold_parameters: declared (1.9), or role() (1.4 to 1.8).
bool hears_unit_events(const StrategyInstance& strategy);

}  // namespace gradsweep::plugins
