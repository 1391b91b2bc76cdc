#pragma once
// One blocking communication call under the watchdog (comm/forensics/collective_timeout.hpp): the one way the NCCL
// backend, which keeps its own watchdog, watches a call, so that the watch covers exactly the call and never the checks
// around it (an argument error must fail at once, not be reported as a hang). Internal to host/comm.
#include "comm/forensics/collective_timeout.hpp"

#include <string>
#include <utility>

namespace gradsweep::comm {

// Runs `call` watched as `what` and returns what it returns.
template <typename Call>
decltype(auto) watched(CollectiveTimeout& timeout, std::string what, Call&& call) {
  const CollectiveTimeout::Scope watch(timeout, std::move(what));
  return std::forward<Call>(call)();
}

}  // namespace gradsweep::comm
