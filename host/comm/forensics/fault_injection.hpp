#pragma once
// A host-owned fault for `gradsweep check strategy`'s "no rank left hanging" property (docs/plugins.md):
// with GRADSWEEP_INJECT_FAULT=RANK:STEP in its environment, rank RANK's first communicator call issued at
// or after training step STEP fails, once, as a collective that broke would. The call returns a failed
// Status inside the strategy's own code (on the calling thread, or through its request for an async call),
// so what is checked is what a plugin does with an error: pass it on (the host then ends every rank) or
// swallow it and leave the other ranks waiting. Unset, nothing is injected and nothing is read per call
// but one atomic flag.
#include "comm/forensics/flight_recorder.hpp"

#include <cstdint>
#include <string>

namespace gradsweep::comm::fault_injection {

// The trainer says which step runs, before the strategy's begin_step.
void enter_step(std::int64_t step);

// Throws std::runtime_error ("injected fault (GRADSWEEP_INJECT_FAULT=1:4): allreduce ... on rank 1 at
// step 4") on the armed rank once its step has come; the first such call only. The call is described only
// then: this runs on every call.
void check_call(int rank, const CallShape& call);

// "RANK:STEP" -> {rank, step}; throws std::invalid_argument naming the variable for anything else.
struct Fault {
  int rank = -1;
  std::int64_t step = -1;
};
Fault parse_fault(const std::string& text);

}  // namespace gradsweep::comm::fault_injection
