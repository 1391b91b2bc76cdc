#pragma once
// The host side of sdk::Communicator: every backend counts bytes and time the same way, so that
// metrics mean the same thing whatever moved the data.
#include <gradsweep/sdk/services.hpp>

#include <cstdint>
#include <memory>

namespace gradsweep::host {

struct CommStats {
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  double seconds = 0.0;  // wall time spent inside communication calls
  std::uint64_t calls = 0;
};

class HostCommunicator : public sdk::Communicator {
 public:
  virtual ~HostCommunicator() = default;
  // Counters since the last call; the trainer takes them once per step.
  CommStats take_stats() { return std::exchange(stats_, {}); }

 protected:
  CommStats stats_;
};

// Rank 0 of 1: collectives are identities, point-to-point has no peer.
std::unique_ptr<HostCommunicator> make_local_communicator();

// Every rank of the MPI job (a duplicate of MPI_COMM_WORLD), for CPU tensors; initialises MPI first if
// nothing has (see comm/mpi_runtime.hpp). Throws std::runtime_error when MPI cannot start.
std::unique_ptr<HostCommunicator> make_mpi_communicator();

}  // namespace gradsweep::host
