#pragma once
// What one training job of the check shows, judged by what the strategy declares for its rank count:
//   exact        declared synchronous-exact: every step's loss and the final validation loss equal the
//                reference's (the kit cell's strategy on one rank, same global batch) within fp32 rounding,
//                the equivalence tests' tolerances (tests/strategies/equivalence_test.cpp);
//   loss falls   otherwise: the last step's loss is below the first's;
//   ranks agree  declared agreeing, more than one rank: every rank's final checkpoint holds the same
//                parameters, bit for bit.
#include "conformance/kit_job.hpp"
#include "conformance/kit_plan.hpp"
#include "conformance/kit_report.hpp"

#include <vector>

namespace gradsweep::conformance {

// Relative tolerances of `exact`: per step's training loss, and the final validation loss.
inline constexpr double kLossTolerance = 1e-5;
inline constexpr double kValTolerance = 1e-4;

// `run`'s losses against `reference`'s within the tolerances above, as finding `property`.
Finding exactness(const std::string& property, const JobRun& run, const JobRun& reference,
                  const std::string& reference_name);

std::vector<Finding> training_findings(const KitContext& ctx, const RankPlan& plan, const JobRun& run,
                                       const JobRun& reference);

}  // namespace gradsweep::conformance
