#pragma once
// How far each rank's monotonic clock is from rank 0's, so that the ranks' timelines (train/timeline.hpp)
// line up in one trace. Ranks on one machine share CLOCK_MONOTONIC and measure an offset of about zero;
// ranks on different machines do not share it at all.
#include "comm/core/host_communicator.hpp"

#include <cstdint>

namespace gradsweep::train {

struct ClockOffset {
  // Add to this rank's steady_clock nanoseconds to get rank 0's.
  std::int64_t offset_ns = 0;
  // The shortest round trip seen; the offset is exact to within half of it.
  std::int64_t round_trip_ns = 0;
  int rounds = 0;
};

// Ping-pong against rank 0, one rank at a time (every rank calls it): rank r sends at t1, rank 0 answers
// with its clock t2, r receives at t3, and offset = t2 - (t1 + t3) / 2 from the round with the shortest
// round trip (Cristian's algorithm). Point-to-point only, so no collective numbering changes; the bytes
// are dropped from the step counters.
ClockOffset measure_clock_offset(comm::HostCommunicator& comm, int rounds = 16);

std::int64_t steady_ns();

}  // namespace gradsweep::train
