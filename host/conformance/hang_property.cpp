#include "conformance/hang_property.hpp"

#include "conformance/kit_job.hpp"

#include <regex>

namespace gradsweep::conformance {

Finding check_no_hang(const KitContext& ctx, int ranks) {
  Finding f{"no hang", ranks};
  const int rank = ranks - 1, step = ctx.ws.steps / 2;
  const std::string fault = std::to_string(rank) + ":" + std::to_string(step);
  JobSpec spec{"fault-" + std::to_string(ranks), ranks, ctx.strategy_sets, {}, {"GRADSWEEP_INJECT_FAULT=" + fault},
               ctx.hang_deadline_seconds};
  spec.overrides.push_back("runtime.comm_timeout=0");
  const JobRun run = ctx.run(spec, std::to_string(ranks) + " ranks, rank " + std::to_string(rank) +
                                       "'s communicator fails at step " + std::to_string(step));
  f.figure = run.timed_out ? "still running after " + short_number(run.seconds) + " s"
                           : "ended in " + short_number(run.seconds) + " s, exit " + std::to_string(run.exit_code);
  const std::string named = "rank " + std::to_string(rank);
  if (run.timed_out)
    f.reason = "rank " + std::to_string(rank) + "'s communicator call failed at step " + std::to_string(step) +
               ", and the job had not ended " + short_number(ctx.hang_deadline_seconds) +
               " s after it started: a rank was left waiting (the error swallowed?)";
  else if (run.exit_code == 0)
    f.reason = "the job ended 0: rank " + std::to_string(rank) + "'s failed call at step " + std::to_string(step) +
               " was ignored (or it made no call after that step)";
  else if (!std::regex_search(run.output, std::regex("\\b" + named + "\\b")))
    f.reason = "the job ended, but its output does not name " + named + ": " + run.failure();
  f.verdict = f.reason.empty() ? Verdict::Pass : Verdict::Fail;
  return f;
}

}  // namespace gradsweep::conformance
