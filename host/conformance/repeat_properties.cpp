#include "conformance/repeat_properties.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

namespace gradsweep::conformance {
namespace {

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// "" when `run` recorded exactly `whole`'s losses and validation loss; else where they first differ.
std::string first_difference(const JobRun& run, const JobRun& whole, double& worst) {
  worst = 0;
  std::string where;
  if (run.losses.size() != whole.losses.size())
    return std::to_string(run.losses.size()) + " steps recorded against " + std::to_string(whole.losses.size());
  for (std::size_t i = 0; i < run.losses.size(); ++i) {
    const double d = std::abs(run.losses[i] - whole.losses[i]);
    if (!(d <= worst)) worst = d;
    if (d != 0 && where.empty())
      where = "step " + std::to_string(i) + ": loss " + short_number(run.losses[i]) + " against " +
              short_number(whole.losses[i]);
  }
  if (!where.empty()) return where;
  if (run.val_loss != whole.val_loss)
    return "the validation loss: " + short_number(run.val_loss.value_or(NAN)) + " against " +
           short_number(whole.val_loss.value_or(NAN));
  return "";
}

}  // namespace

Finding check_resume(const KitContext& ctx, const JobRun& whole) {
  Finding f{"resume", whole.ranks};
  const int half = ctx.ws.steps / 2;
  const std::string label = "resume-" + std::to_string(whole.ranks);
  JobSpec spec{label, whole.ranks, ctx.strategy_sets, {"--stop-after", std::to_string(half)}};
  const JobRun cut =
      ctx.run(spec, std::to_string(whole.ranks) + " ranks, interrupted after step " + std::to_string(half));
  if (!cut.ok()) {
    f.verdict = Verdict::Fail;
    f.reason = "the interrupted job failed: " + cut.failure();
    return f;
  }
  spec.flags.clear();
  spec.again = true;
  // Same directory: the second job finds the first's checkpoint, as a rerun of a killed job does.
  const JobRun resumed = ctx.run(spec, "resumed");
  if (!resumed.ok()) {
    f.verdict = Verdict::Fail;
    f.reason = "the resumed job failed: " + resumed.failure();
    return f;
  }
  if (read_text(resumed.dir / "rank-0.log").find("resumed from") == std::string::npos) {
    f.verdict = Verdict::Fail;
    f.reason = "the second job did not resume from the checkpoint at step " + std::to_string(half);
    return f;
  }
  double worst = 0;
  const std::string diff = first_difference(resumed, whole, worst);
  f.figure = "max |dloss| " + short_number(worst) + " over " + std::to_string(resumed.losses.size()) + " steps";
  f.verdict = diff.empty() ? Verdict::Pass : Verdict::Fail;
  if (!diff.empty())
    f.reason = "resumed at step " + std::to_string(half) + ", it differs from the uninterrupted job at " + diff +
               " (state not in save/load?)";
  return f;
}

Finding check_determinism(const KitContext& ctx, const JobRun& first) {
  Finding f{"deterministic", first.ranks};
  // An asynchronous strategy's updates land in the order messages arrive: two runs may differ, as it says.
  if (!ctx.plan(first.ranks).capabilities.deterministic) {
    f.verdict = Verdict::Skip;
    f.reason = "not declared deterministic (deterministic_runs(false) for these options): two runs may differ";
    return f;
  }
  const std::string label = "twice-" + std::to_string(first.ranks);
  const JobRun again =
      ctx.run({label, first.ranks, ctx.strategy_sets}, std::to_string(first.ranks) + " ranks, the same job again");
  if (!again.ok()) {
    f.verdict = Verdict::Fail;
    f.reason = "the second job failed: " + again.failure();
    return f;
  }
  double worst = 0;
  const std::string diff = first_difference(again, first, worst);
  f.figure = "max |dloss| " + short_number(worst) + " over " + std::to_string(again.losses.size()) + " steps";
  f.verdict = diff.empty() ? Verdict::Pass : Verdict::Fail;
  if (!diff.empty()) f.reason = "two identical jobs differ at " + diff;
  return f;
}

}  // namespace gradsweep::conformance
