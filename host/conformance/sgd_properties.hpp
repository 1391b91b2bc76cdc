#pragma once
// The properties judged under an optimizer for which the gradient's scale matters: SGD with momentum and
// no clipping. The kit's own cell trains with AdamW and clipping, which are nearly blind to that scale,
// so a strategy averaging with the wrong divisor can pass `exact` there; it cannot pass these.
//   exact (sgd)  declared exact, at the most ranks of the check: every step's loss and the validation
//                loss equal the reference strategy's on one rank under the same SGD (`exact`'s tolerances);
//   reshard      declared `reshards`: a job at 3 ranks checkpointed and stopped half-way is resumed, from
//                copies of its directory, at 2 and at 4 ranks. Each must say it resharded, and then
//                (declared exact) equal the one-rank reference within `exact`'s tolerances, or (not exact)
//                end with a validation loss within kReshardBound of the uninterrupted 3-rank job's. A
//                strategy that forgets a piece of state when resharding (its momentum, a residual) fails.
#include "conformance/kit_job.hpp"
#include "conformance/kit_plan.hpp"
#include "conformance/kit_report.hpp"

#include <vector>

namespace gradsweep::conformance {

// The SGD the two properties train with (--set overrides of the kit's cell).
inline const std::vector<std::string> kSgdSets{"train.optimizer=sgd", "train.momentum=0.9", "train.grad_clip=0",
                                               "train.lr=0.03"};
// Relative difference of the final validation loss a strategy that is not exact may show after resharding.
inline constexpr double kReshardBound = 0.02;
// The world sizes of `reshard`: saved by the first, resumed at the others.
inline constexpr int kReshardFrom = 3;
inline constexpr int kReshardTo[] = {2, 4};

// `plans` for 2, 3 and 4 ranks (the reshard property's), `widest` the most ranks the check runs.
std::vector<Finding> sgd_findings(const KitContext& ctx, const std::vector<RankPlan>& reshard_plans, int widest);

}  // namespace gradsweep::conformance
