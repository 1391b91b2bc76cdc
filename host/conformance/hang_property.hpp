#pragma once
// "no hang": a job in which one rank fails must end, every rank of it, soon, non-zero, naming the rank.
// The last rank's first communicator call at or after step steps / 2 fails
// (GRADSWEEP_INJECT_FAULT, comm/forensics/fault_injection.hpp): inside the strategy's own code, as a broken
// collective would. A strategy that passes the error on lets the host end the job (MPI_Abort); one that
// swallows it (a communication thread that drops its error while the training thread waits for it)
// leaves the ranks waiting, and the job runs into the kit's deadline. The collective watchdog is turned
// off for this job (runtime.comm_timeout: 0), so that it does not end the job in the plugin's place.
#include "conformance/kit_plan.hpp"
#include "conformance/kit_report.hpp"

namespace gradsweep::conformance {

Finding check_no_hang(const KitContext& ctx, int ranks);

}  // namespace gradsweep::conformance
