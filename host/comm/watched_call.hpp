#pragma once
// One blocking communication call under the watchdog (comm/collective_timeout.hpp): the one way the
// backends watch a call, so that the watch covers exactly the call and never the checks around it (an
// argument error must fail at once, not be reported as a hang). Internal to host/comm.
#include "comm/collective_timeout.hpp"
#include "comm/mpi_buffer.hpp"

#include <string>
#include <utility>

namespace gradsweep::comm {

// Runs `call` watched as `what` and returns what it returns.
template <typename Call>
decltype(auto) watched(CollectiveTimeout& timeout, std::string what, Call&& call) {
  const CollectiveTimeout::Scope watch(timeout, std::move(what));
  return std::forward<Call>(call)();
}

// Runs one MPI call (`call` returns its code) watched as `what`, then turns a failing code into an error
// naming the operation `op` and the MPI `function` (mpi::check_mpi).
template <typename Call>
void watched_mpi(CollectiveTimeout& timeout, std::string what, const std::string& op, const char* function,
                 Call&& call) {
  const int rc = watched(timeout, std::move(what), std::forward<Call>(call));
  mpi::check_mpi(rc, op, function);
}

}  // namespace gradsweep::comm
