#pragma once
// The host side of sdk::Communicator: every backend counts bytes and time the same way, so that
// metrics mean the same thing whatever moved the data.
#include <gradsweep/sdk/services.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

namespace gradsweep::host {

class FlightRecorder;

struct CommStats {
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  // Busy time: wall time communication was in progress for this rank, i.e. blocking calls plus the
  // time asynchronous operations ran on the backend's worker (whether or not anyone waited for them).
  double seconds = 0.0;
  std::uint64_t calls = 0;
  // The sum over calls of nccl-tests' S (the collective's size: the tensor for allreduce/broadcast/send/
  // recv, the full input of reduce_scatter, the full output of allgather), so algbw = payload_bytes / seconds.
  std::uint64_t payload_bytes = 0;
  // Time the calling threads spent blocked: inside blocking calls and inside Request::wait (or a request's
  // destructor). With one calling thread, blocked_seconds <= seconds, and 1 - blocked/busy is the
  // fraction of communication hidden behind computation.
  double blocked_seconds = 0.0;

  CommStats& operator+=(const CommStats& o) {
    bytes_sent += o.bytes_sent;
    bytes_received += o.bytes_received;
    seconds += o.seconds;
    calls += o.calls;
    payload_bytes += o.payload_bytes;
    blocked_seconds += o.blocked_seconds;
    return *this;
  }
};

class HostCommunicator : public sdk::Communicator {
 public:
  virtual ~HostCommunicator() = default;
  // Counters since the last call; the trainer takes them once per step. Safe while a backend's worker
  // thread is adding to them.
  CommStats take_stats() {
    const std::lock_guard<std::mutex> lock(stats_mutex_);
    return std::exchange(stats_, {});
  }
  // The blocked time counted since the last take_stats(), without taking it: the timeline
  // (train/timeline.hpp) reads it at phase boundaries to split each phase into compute and waiting.
  double blocked_seconds_so_far() {
    const std::lock_guard<std::mutex> lock(stats_mutex_);
    return stats_.blocked_seconds;
  }
  // The backend's record of its calls, for the timeline's communication spans; null when it keeps none.
  virtual const FlightRecorder* flight_recorder() { return nullptr; }

 protected:
  // Adds to the counters from any thread.
  void add_stats(const CommStats& delta) {
    const std::lock_guard<std::mutex> lock(stats_mutex_);
    stats_ += delta;
  }

  CommStats stats_;  // guarded by stats_mutex_
  std::mutex stats_mutex_;
};

// Rank 0 of 1: collectives are identities, point-to-point has no peer.
std::unique_ptr<HostCommunicator> make_local_communicator();

// Every rank of the MPI job (a duplicate of MPI_COMM_WORLD), for CPU tensors; initialises MPI first if
// nothing has (see comm/mpi_runtime.hpp). Throws std::runtime_error when MPI cannot start.
std::unique_ptr<HostCommunicator> make_mpi_communicator();

}  // namespace gradsweep::host
