#pragma once
// The communicator stack: one function that wraps any backend in the same layers, in the same order, so
// that every backend (local, MPI, NCCL, the tests' thread-ranks) gets the same checks and the same hang
// verdicts (docs/communicators.md#the-communicator-stack):
//
//   CheckedCommunicator     argument checks, before anything is numbered, watched or sent
//   WatchdogCommunicator    each call numbered and watched; one past the deadline named by rank, call, number,
//                           with the verdict of the ranks' flight-recorder dumps
//   RecorderCommunicator    each call in the flight recorder; fingerprints (runtime.check_collectives); dumps
//   CountingCommunicator    each call's bytes, size, time and count, into the ledger that take_stats() reads
//   the backend             a transport: it moves the data
//
// A backend that carries a layer inside it (BuiltInLayers: the NCCL backend watches the GPU's work, keeps its
// own flight recorder and counts the GPU's time) does not get that layer again, so that nothing is reported
// twice.
#include "comm/core/host_communicator.hpp"
#include "comm/layers/watchdog_communicator.hpp"

#include <memory>

namespace gradsweep::comm {

// Which of the stack's layers a backend already carries inside.
struct BuiltInLayers {
  bool watchdog = false;  // its own stuck-call watchdog and hang verdict (NCCL)
  bool recorder = false;  // its own flight recorder, fingerprint check and dumps (NCCL)
  bool counting = false;  // its own byte and time counting (NCCL: the time its work took on the GPU)
};

struct StackOptions {
  BuiltInLayers built_in;
  // The collective deadline; < 0: comm_timeout_seconds(kDefaultCommTimeoutSeconds) (GRADSWEEP_COMM_TIMEOUT,
  // runtime.comm_timeout).
  double timeout_seconds = -1;
  HangHandler on_hang = end_process_on_hang;
  // How long a rank whose call is overdue waits for the other ranks' flight-recorder dumps.
  double dump_grace_seconds = WatchdogCommunicator::kDefaultDumpGraceSeconds;
};

// `backend` inside the stack's layers; the result's take_stats(), flight_recorder() and groups are the
// backend's, and transport() is `backend` itself.
std::unique_ptr<HostCommunicator> wrap_communicator(std::unique_ptr<HostCommunicator> backend,
                                                    const StackOptions& options = {});

}  // namespace gradsweep::comm
