#pragma once
// What the strategy under check declares for each rank count of the check (its capabilities as its
// check_plan narrows them for the options given, and any refusal in its own words), asked exactly as the
// planner asks it (experiment/plan/sweep_plan_check.hpp), and what every property needs to run its jobs.
#include "conformance/kit_job.hpp"
#include "conformance/kit_workspace.hpp"
#include "plugins/plugin_declarations.hpp"

#include <gradsweep/sdk/capabilities.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace gradsweep::conformance {

struct RankPlan {
  int ranks = 1;
  std::string refusal;  // non-empty: the rank count is skipped with this message
  // As declared and narrowed; a plugin that declares nothing gets the defaults: not exact, ranks not
  // agreeing (only loss falls, resume, determinism, options and no hang are checked then).
  sdk::StrategyCapabilities capabilities;
};

struct KitContext {
  Workspace ws;
  const plugins::PluginRecord* strategy = nullptr;
  std::vector<std::string> strategy_sets;  // strategy.name=NAME, then the options given with --set
  std::vector<RankPlan> plans;             // one per rank count asked for, in order
  double hang_deadline_seconds = 30;
  std::ostream* progress = nullptr;  // one line per job (stderr)

  // The rank counts not refused, in order.
  std::vector<int> runnable_ranks() const;
  const RankPlan& plan(int ranks) const;
  void say(const std::string& line) const;
  // Runs a job, saying "  LABEL: WHAT" before and how long it took after.
  JobRun run(const JobSpec& spec, const std::string& what) const;
};

// Judges each rank count in `ranks` for the strategy named in `ctx` with its options; throws the host's
// configuration error (naming the key) when the options given are not valid at all.
std::vector<RankPlan> plan_ranks(const KitContext& ctx, const plugins::PluginRegistry& registry,
                                 const std::vector<int>& ranks);

}  // namespace gradsweep::conformance
