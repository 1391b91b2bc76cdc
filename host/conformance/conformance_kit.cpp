#include "conformance/conformance_kit.hpp"

#include "conformance/hang_property.hpp"
#include "conformance/kit_job.hpp"
#include "conformance/kit_plan.hpp"
#include "conformance/option_property.hpp"
#include "conformance/repeat_properties.hpp"
#include "conformance/sgd_properties.hpp"
#include "conformance/training_properties.hpp"
#include "config/cell_config.hpp"
#include "experiment/launch/launcher_local.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <stdexcept>

namespace gradsweep::conformance {
namespace fs = std::filesystem;
namespace {

fs::path workspace_dir(const KitRequest& request) {
  if (!request.keep.empty()) return fs::absolute(request.keep);
  return fs::temp_directory_path() / ("gradsweep-check-" + request.strategy + "-" + std::to_string(::getpid()));
}

const plugins::PluginRecord& find_strategy(const plugins::PluginRegistry& registry, const std::string& name) {
  if (const plugins::PluginRecord* found = registry.try_find(sdk::PluginKind::Strategy, name)) return *found;
  std::string known;
  for (const auto& p : registry.plugins())
    if (p.descriptor->kind == sdk::PluginKind::Strategy) known += (known.empty() ? "" : ", ") + p.name;
  throw std::runtime_error("no strategy plugin '" + name + "'; found: " + known);
}

void check_option_keys(const std::vector<std::string>& options) {
  for (const auto& o : options)
    if (o.rfind("strategy.", 0) != 0 || o.find('=') == std::string::npos || o.rfind("strategy.name=", 0) == 0)
      throw std::invalid_argument("--set " + o +
                                  ": the check takes the strategy's own options only, "
                                  "strategy.KEY=VALUE (the strategy is named by its argument)");
}

// The per-rank-count properties a refused rank count skips.
void skip_rank_count(const RankPlan& plan, KitReport& report) {
  const std::string skipped = "skipped: " + plan.refusal;
  report.findings.push_back(
      {plan.capabilities.synchronous_exact ? "exact" : "loss falls", plan.ranks, Verdict::Skip, "", skipped});
}

// Where the reference and every rank count's training job run; the reference is reused when the
// strategy under check is the reference itself, with no options.
std::map<int, JobRun> train_each_rank_count(const KitContext& ctx, const KitRequest& request, const JobRun& reference,
                                            KitReport& report) {
  std::map<int, JobRun> runs;
  for (const RankPlan& plan : ctx.plans) {
    if (!plan.refusal.empty()) {
      skip_rank_count(plan, report);
      continue;
    }
    const bool is_reference = plan.ranks == 1 && request.strategy == ctx.ws.reference && request.options.empty();
    const std::string label = "train-" + std::to_string(plan.ranks);
    if (is_reference) ctx.say("  " + label + ": the reference's job");
    const JobRun run = is_reference
                           ? reference
                           : ctx.run({label, plan.ranks, ctx.strategy_sets}, std::to_string(plan.ranks) + " rank(s)");
    const auto found = training_findings(ctx, plan, run, reference);
    report.findings.insert(report.findings.end(), found.begin(), found.end());
    runs.emplace(plan.ranks, run);
  }
  return runs;
}

void run_properties(const KitContext& ctx, const KitRequest& request, const std::vector<RankPlan>& reshard_plans,
                    KitReport& report) {
  const JobRun reference =
      ctx.run({"reference", 1, {"strategy.name=" + ctx.ws.reference}}, "'" + ctx.ws.reference + "' on 1 rank");
  if (!reference.ok())
    throw std::runtime_error("the reference strategy '" + ctx.ws.reference + "' did not train: " + reference.failure());
  const std::map<int, JobRun> runs = train_each_rank_count(ctx, request, reference, report);
  const std::vector<int> runnable = ctx.runnable_ranks();
  if (runnable.empty())  // nothing checked is not a pass
    report.findings.push_back({"trains", 0, Verdict::Fail, "",
                               "every rank count was refused (first: " + ctx.plans.front().refusal +
                                   "): give options that fit the kit's model (--set) or another --cell"});
  else {
    // The most ranks: the hardest split of the batch, and the most peers to disagree with.
    const JobRun& widest = runs.at(runnable.back());
    if (widest.ok()) {
      report.findings.push_back(check_resume(ctx, widest));
      report.findings.push_back(check_determinism(ctx, widest));
    } else {
      for (const char* property : {"resume", "deterministic"})
        report.findings.push_back({property, widest.ranks, Verdict::Fail, "", "training failed: " + widest.failure()});
    }
    const auto sgd = sgd_findings(ctx, reshard_plans, runnable.back());
    report.findings.insert(report.findings.end(), sgd.begin(), sgd.end());
  }
  // One job: what is checked is the strategy's handling of an error, the same at any rank count > 1.
  if (!runnable.empty() && runnable.back() > 1)
    report.findings.push_back(check_no_hang(ctx, runnable.back()));
  else
    report.findings.push_back({"no hang", 0, Verdict::Skip, "", "no rank count of the check has a second rank"});
  report.findings.push_back(check_bad_options(ctx));
}

}  // namespace

KitReport check_strategy(const KitRequest& request, std::ostream& progress) {
  const auto start = std::chrono::steady_clock::now();
  check_option_keys(request.options);
  experiment::allow_mpirun_as_root();
  KitContext ctx;
  ctx.progress = &progress;
  ctx.hang_deadline_seconds = request.hang_deadline_seconds;
  const fs::path dir = workspace_dir(request);
  fs::remove_all(dir);
  ctx.ws = make_workspace(dir, request.cell.empty() ? default_kit_cell() : request.cell, request.steps);
  KitReport report{request.strategy, request.options, ctx.ws.reference, request.steps};
  try {
    const config::CellConfig base = config::load_cell_config(ctx.ws.cell);
    plugins::PluginRegistry registry;
    registry.scan(plugins::PluginRegistry::search_path(base.plugin_paths));
    ctx.strategy = &find_strategy(registry, request.strategy);
    ctx.strategy_sets = {"strategy.name=" + request.strategy};
    ctx.strategy_sets.insert(ctx.strategy_sets.end(), request.options.begin(), request.options.end());
    std::vector<int> ranks = request.ranks;  // ascending, once each: the last is "the most ranks"
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    ctx.plans = plan_ranks(ctx, registry, ranks);
    std::vector<int> reshard_ranks{kReshardFrom};
    reshard_ranks.insert(reshard_ranks.end(), std::begin(kReshardTo), std::end(kReshardTo));
    const std::vector<RankPlan> reshard_plans = plan_ranks(ctx, registry, reshard_ranks);
    progress << "checking strategy '" << request.strategy << "' in " << dir.string() << std::endl;
    run_properties(ctx, request, reshard_plans, report);
  } catch (...) {
    if (request.keep.empty()) fs::remove_all(dir);
    throw;
  }
  if (request.keep.empty())
    fs::remove_all(dir);
  else
    report.workspace = dir.string();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace gradsweep::conformance
