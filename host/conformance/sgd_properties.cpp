#include "conformance/sgd_properties.hpp"

#include "conformance/training_properties.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace gradsweep::conformance {
namespace fs = std::filesystem;
namespace {

std::vector<std::string> with_sgd(std::vector<std::string> sets) {
  sets.insert(sets.end(), kSgdSets.begin(), kSgdSets.end());
  return sets;
}

std::string log_of(const JobRun& run) {
  std::ifstream in(run.dir / "rank-0.log");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// "" when every world size of the property can run; else the first refusal.
std::string refused(const std::vector<RankPlan>& plans) {
  for (const auto& p : plans)
    if (!p.refusal.empty()) return std::to_string(p.ranks) + " ranks: " + p.refusal;
  return "";
}

// The resumed job at `ranks` against `reference` (exact) or `whole` (not exact).
Finding judge_resumed(const JobRun& resumed, const JobRun& reference, const JobRun& whole, bool exact,
                      const std::string& reference_name) {
  const std::string said =
      "resharded from " + std::to_string(kReshardFrom) + " ranks to " + std::to_string(resumed.ranks);
  if (!resumed.ok())
    return {"reshard", resumed.ranks, Verdict::Fail, "", "the resumed job failed: " + resumed.failure()};
  if (log_of(resumed).find(said) == std::string::npos)
    return {"reshard", resumed.ranks, Verdict::Fail, "",
            "the job at " + std::to_string(resumed.ranks) + " ranks did not resume the checkpoint of " +
                std::to_string(kReshardFrom) + " ranks (its log does not say \"" + said + "\")"};
  if (exact) {
    Finding f = exactness("reshard", resumed, reference, reference_name);
    if (f.verdict == Verdict::Fail)
      f.reason = "resumed at " + std::to_string(resumed.ranks) + " ranks from " + std::to_string(kReshardFrom) + ", " +
                 f.reason + " (state lost or mis-split in load_reshard?)";
    return f;
  }
  Finding f{"reshard", resumed.ranks};
  if (!resumed.val_loss || !whole.val_loss) {
    f.verdict = Verdict::Fail;
    f.reason = "no validation loss to compare";
    return f;
  }
  const double rel = std::abs(*resumed.val_loss - *whole.val_loss) / std::abs(*whole.val_loss);
  f.figure = "val loss " + short_number(*resumed.val_loss) + " against " + short_number(*whole.val_loss) +
             " uninterrupted (rel " + short_number(rel) + ")";
  f.verdict = rel <= kReshardBound ? Verdict::Pass : Verdict::Fail;
  if (f.verdict == Verdict::Fail)
    f.reason = "resumed at " + std::to_string(resumed.ranks) + " ranks, its validation loss is further than " +
               short_number(kReshardBound) + " (relative) from the uninterrupted job's";
  return f;
}

std::vector<Finding> reshard(const KitContext& ctx, const std::vector<RankPlan>& plans, const JobRun& reference) {
  const RankPlan& from =
      *std::find_if(plans.begin(), plans.end(), [](const RankPlan& p) { return p.ranks == kReshardFrom; });
  if (!from.capabilities.reshards) return {{"reshard", 0, Verdict::Skip, "", "not declared (resharding())"}};
  if (const std::string why = refused(plans); !why.empty())
    return {{"reshard", 0, Verdict::Skip, "", "skipped: " + why}};
  const bool exact = from.capabilities.synchronous_exact;
  const std::string saved = "reshard-" + std::to_string(kReshardFrom);
  const JobRun cut = ctx.run(
      {saved, kReshardFrom, with_sgd(ctx.strategy_sets), {"--stop-after", std::to_string(ctx.ws.steps / 2)}},
      std::to_string(kReshardFrom) + " ranks (sgd), interrupted after step " + std::to_string(ctx.ws.steps / 2));
  if (!cut.ok()) return {{"reshard", kReshardFrom, Verdict::Fail, "", "the interrupted job failed: " + cut.failure()}};
  // Not exact: the uninterrupted job at the saving world size is what resharding is measured against.
  JobRun whole;
  if (!exact)
    whole = ctx.run({"whole-" + std::to_string(kReshardFrom), kReshardFrom, with_sgd(ctx.strategy_sets)},
                    std::to_string(kReshardFrom) + " ranks (sgd), uninterrupted");
  std::vector<Finding> out;
  for (const int ranks : kReshardTo) {
    JobSpec spec{"reshard-" + std::to_string(kReshardFrom) + "-to-" + std::to_string(ranks), ranks,
                 with_sgd(ctx.strategy_sets)};
    spec.copy_of = saved;
    const JobRun resumed = ctx.run(spec, "resumed at " + std::to_string(ranks) + " ranks");
    out.push_back(judge_resumed(resumed, reference, whole, exact, ctx.ws.reference));
  }
  return out;
}

}  // namespace

std::vector<Finding> sgd_findings(const KitContext& ctx, const std::vector<RankPlan>& reshard_plans, int widest) {
  const RankPlan& plan = ctx.plan(widest);
  const bool exact = plan.capabilities.synchronous_exact;
  bool reshards = false;
  for (const auto& p : reshard_plans) reshards = reshards || (p.ranks == kReshardFrom && p.capabilities.reshards);
  if (!exact && !reshards)
    return {{"exact (sgd)", 0, Verdict::Skip, "", "not declared (exact())"},
            {"reshard", 0, Verdict::Skip, "", "not declared (resharding())"}};
  const JobRun reference = ctx.run({"reference-sgd", 1, with_sgd({"strategy.name=" + ctx.ws.reference})},
                                   "'" + ctx.ws.reference + "' on 1 rank (sgd)");
  if (!reference.ok()) return {{"exact (sgd)", 0, Verdict::Fail, "", "the reference failed: " + reference.failure()}};
  std::vector<Finding> out;
  if (!exact)
    out.push_back({"exact (sgd)", 0, Verdict::Skip, "", "not declared (exact())"});
  else if (widest < 2)
    out.push_back({"exact (sgd)", widest, Verdict::Skip, "", "no rank count of the check has a second rank"});
  else {
    const JobRun run = ctx.run({"sgd-" + std::to_string(widest), widest, with_sgd(ctx.strategy_sets)},
                               std::to_string(widest) + " ranks (sgd)");
    out.push_back(run.ok() ? exactness("exact (sgd)", run, reference, ctx.ws.reference)
                           : Finding{"exact (sgd)", widest, Verdict::Fail, "", "training failed: " + run.failure()});
  }
  const auto resharded = reshard(ctx, reshard_plans, reference);
  out.insert(out.end(), resharded.begin(), resharded.end());
  return out;
}

}  // namespace gradsweep::conformance
