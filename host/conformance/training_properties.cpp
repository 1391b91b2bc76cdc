#include "conformance/training_properties.hpp"

#include <torch/torch.h>

#include <cmath>

namespace gradsweep::conformance {
namespace fs = std::filesystem;
namespace {}  // namespace

Finding exactness(const std::string& property, const JobRun& run, const JobRun& reference,
                  const std::string& reference_name) {
  Finding f{property, run.ranks};
  if (run.losses.size() != reference.losses.size() || !run.val_loss || !reference.val_loss) {
    f.verdict = Verdict::Fail;
    f.reason = std::to_string(run.losses.size()) + " steps recorded against the reference's " +
               std::to_string(reference.losses.size());
    return f;
  }
  double worst = 0;
  std::size_t worst_step = 0;
  for (std::size_t i = 0; i < run.losses.size(); ++i) {
    const double rel = std::abs(run.losses[i] - reference.losses[i]) / std::abs(reference.losses[i]);
    if (!(rel <= worst)) worst = rel, worst_step = i;  // NaN counts as worst
  }
  const double val = std::abs(*run.val_loss - *reference.val_loss) / std::abs(*reference.val_loss);
  f.figure =
      "max rel |dloss| " + short_number(worst) + " (step " + std::to_string(worst_step) + "), val " + short_number(val);
  f.verdict = worst < kLossTolerance && val < kValTolerance ? Verdict::Pass : Verdict::Fail;
  if (f.verdict == Verdict::Fail)
    f.reason = "declared exact, but its loss differs from '" + reference_name + "' at the same global batch: step " +
               std::to_string(worst_step) + " " + short_number(run.losses[worst_step]) + " against " +
               short_number(reference.losses[worst_step]) + " (tolerance " + short_number(kLossTolerance) +
               " relative, val " + short_number(kValTolerance) + ")";
  return f;
}

namespace {

Finding loss_falls(const JobRun& run) {
  Finding f{"loss falls", run.ranks};
  if (run.losses.size() < 2) {
    f.verdict = Verdict::Fail;
    f.reason = std::to_string(run.losses.size()) + " steps recorded";
    return f;
  }
  f.figure = "loss " + short_number(run.losses.front()) + " -> " + short_number(run.losses.back());
  f.verdict = run.losses.back() < run.losses.front() ? Verdict::Pass : Verdict::Fail;
  if (f.verdict == Verdict::Fail) f.reason = "the last step's loss is not below the first's";
  return f;
}

// The parameters rank `rank` saved at the end: "param/<name>" -> tensor.
std::map<std::string, torch::Tensor> saved_parameters(const fs::path& cell, int rank, int steps) {
  torch::serialize::InputArchive archive;
  archive.load_from(
      (cell / "checkpoint" / ("rank-" + std::to_string(rank)) / ("step-" + std::to_string(steps)) / "model.pt")
          .string());
  std::map<std::string, torch::Tensor> out;
  for (const auto& key : archive.keys()) {
    if (key.rfind("param/", 0) != 0) continue;
    torch::Tensor t;
    archive.read(key, t);
    out[key.substr(6)] = t;
  }
  return out;
}

Finding ranks_agree(const JobRun& run, int steps) {
  Finding f{"ranks agree", run.ranks};
  try {
    const auto first = saved_parameters(run.dir, 0, steps);
    double worst = 0;
    std::string where;
    for (int r = 1; r < run.ranks; ++r)
      for (const auto& [name, tensor] : saved_parameters(run.dir, r, steps)) {
        const double d = (tensor.to(torch::kDouble) - first.at(name).to(torch::kDouble)).abs().max().item<double>();
        if (!(d <= worst)) worst = d, where = "'" + name + "' on rank " + std::to_string(r);
      }
    f.figure = "max |dparam| " + short_number(worst) + " over " + std::to_string(first.size()) + " tensors";
    f.verdict = worst == 0 ? Verdict::Pass : Verdict::Fail;
    if (f.verdict == Verdict::Fail) f.reason = "declared agreeing, but " + where + " differs from rank 0's";
  } catch (const std::exception& e) {
    f.verdict = Verdict::Fail;
    f.reason = std::string("cannot compare the ranks' checkpoints: ") + e.what();
  }
  return f;
}

}  // namespace

std::vector<Finding> training_findings(const KitContext& ctx, const RankPlan& plan, const JobRun& run,
                                       const JobRun& reference) {
  if (!run.ok()) {
    Finding failed{plan.capabilities.synchronous_exact ? "exact" : "loss falls", run.ranks, Verdict::Fail, "",
                   "training failed: " + run.failure()};
    return {failed};
  }
  std::vector<Finding> out;
  out.push_back(plan.capabilities.synchronous_exact ? exactness("exact", run, reference, ctx.ws.reference)
                                                    : loss_falls(run));
  if (run.ranks > 1) {
    if (plan.capabilities.ranks_agree)
      out.push_back(ranks_agree(run, ctx.ws.steps));
    else
      out.push_back({"ranks agree", run.ranks, Verdict::Skip, "", "not declared (agreeing())"});
  }
  return out;
}

}  // namespace gradsweep::conformance
