#pragma once
// collective_check's sub-communicator modes (check_groups.cpp).
#include "comm/core/host_communicator.hpp"

#include <string>

namespace gradsweep::check {

// Every group check; prints "DONE rank R of N groups checks=C failures=F". Returns the exit code.
int run_groups(comm::HostCommunicator& world);
// `failing` never joins an allreduce of its group; flight-recorder dumps go under `dumps`.
int group_hang(comm::HostCommunicator& world, int failing, const std::string& dumps);

}  // namespace gradsweep::check
