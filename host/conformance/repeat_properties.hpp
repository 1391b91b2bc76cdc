#pragma once
// The properties that train the same cell again and compare, bit for bit, with the first job:
//   resume         interrupted half-way (--stop-after, as a killed job: no final checkpoint) and resumed from
//                  the checkpoint at steps / 2: every step's loss and the validation loss equal the
//                  uninterrupted job's. A strategy that keeps state it does not save fails it;
//   deterministic  the same job twice: equal losses and validation loss; skipped, without a second job, for
//                  a strategy whose capabilities (as narrowed for its options) say it is not deterministic.
#include "conformance/kit_job.hpp"
#include "conformance/kit_plan.hpp"
#include "conformance/kit_report.hpp"

namespace gradsweep::conformance {

// `whole` is the uninterrupted job at `whole.ranks` (checkpointing at steps / 2 as well).
Finding check_resume(const KitContext& ctx, const JobRun& whole);
Finding check_determinism(const KitContext& ctx, const JobRun& first);

}  // namespace gradsweep::conformance
