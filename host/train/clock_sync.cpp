#include "train/clock_sync.hpp"

#include <gradsweep/sdk/status.hpp>

#include <torch/torch.h>

#include <chrono>
#include <limits>

namespace gradsweep::train {
namespace {
// Above any tag a strategy is likely to use, within the 32767 every MPI guarantees.
constexpr int kTag = 32001;
}  // namespace

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

ClockOffset measure_clock_offset(comm::HostCommunicator& comm, int rounds) {
  ClockOffset best;
  if (comm.size() == 1) return best;
  torch::Tensor message = torch::zeros({1}, torch::kLong);
  for (int r = 1; r < comm.size(); ++r) {
    if (comm.rank() == 0) {
      for (int k = 0; k < rounds; ++k) {
        sdk::check(comm.recv(message, r, kTag));
        message[0] = steady_ns();
        sdk::check(comm.send(message, r, kTag));
      }
    } else if (comm.rank() == r) {
      best.round_trip_ns = std::numeric_limits<std::int64_t>::max();
      for (int k = 0; k < rounds; ++k) {
        const std::int64_t t1 = steady_ns();
        sdk::check(comm.send(message, 0, kTag));
        sdk::check(comm.recv(message, 0, kTag));
        const std::int64_t t3 = steady_ns();
        const std::int64_t t2 = message[0].item<std::int64_t>();
        if (t3 - t1 < best.round_trip_ns) {
          best.round_trip_ns = t3 - t1;
          best.offset_ns = t2 - (t1 + (t3 - t1) / 2);
        }
      }
      best.rounds = rounds;
    }
  }
  comm.take_stats();  // the trainer's bookkeeping, not the strategy's traffic
  return best;
}

}  // namespace gradsweep::train
