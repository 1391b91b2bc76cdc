#include "conformance/kit_plan.hpp"

#include "config/cell_config.hpp"
#include "conformance/kit_report.hpp"
#include "experiment/plan/model_facts.hpp"
#include "experiment/plan/sweep_plan_check.hpp"
#include "plugins/plugin_options.hpp"

#include <algorithm>
#include <stdexcept>

namespace gradsweep::conformance {

std::vector<int> KitContext::runnable_ranks() const {
  std::vector<int> out;
  for (const auto& p : plans)
    if (p.refusal.empty()) out.push_back(p.ranks);
  return out;
}

const RankPlan& KitContext::plan(int ranks) const {
  for (const auto& p : plans)
    if (p.ranks == ranks) return p;
  throw std::logic_error("no plan for " + std::to_string(ranks) + " ranks");
}

void KitContext::say(const std::string& line) const {
  if (progress != nullptr) *progress << line << std::endl;
}

JobRun KitContext::run(const JobSpec& spec, const std::string& what) const {
  if (progress != nullptr) *progress << "  " << spec.label << ": " << what << std::flush;
  JobRun done = run_job(ws, spec);
  if (progress != nullptr)
    *progress << " (" << short_number(done.seconds) << " s" << (done.ok() ? "" : ", " + done.failure()) << ")"
              << std::endl;
  return done;
}

std::vector<RankPlan> plan_ranks(const KitContext& ctx, const plugins::PluginRegistry& registry,
                                 const std::vector<int>& ranks) {
  const config::CellConfig config = config::load_cell_config(ctx.ws.cell, ctx.strategy_sets);
  const plugins::PluginRecord& strategy = *ctx.strategy;
  const sdk::Options options = plugins::resolve_plugin_options(strategy, config, "strategy");
  // The model as its plugin resolves it, for a check_plan that looks at it (fsdp's units, a block size).
  experiment::ModelFacts facts;
  std::optional<sdk::ModelInfo> model;
  if (const plugins::PluginRecord* m = registry.try_find(sdk::PluginKind::Model, config.model_name))
    model = facts.of(*m, plugins::resolve_plugin_options(*m, config, "model"));
  else
    throw std::runtime_error(ctx.ws.cell.string() + ": model '" + config.model_name +
                             "' is not among the plugins found");

  std::vector<RankPlan> plans;
  for (const int r : ranks) {
    const plugins::PlanVerdict verdict =
        experiment::check_planned_strategy(strategy, config, 1, r, options, model ? &*model : nullptr);
    RankPlan plan{r, verdict.refusal, verdict.capabilities.value_or(sdk::StrategyCapabilities{})};
    const int computing = std::max(1, verdict.computing_ranks);
    if (plan.refusal.empty() && config.train.batch_size % computing != 0)
      plan.refusal = "the kit's batch of " + std::to_string(config.train.batch_size) +
                     " sequences does not split over " + std::to_string(computing) + " computing ranks";
    plans.push_back(plan);
  }
  return plans;
}

}  // namespace gradsweep::conformance
