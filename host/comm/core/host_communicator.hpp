#pragma once
// The host side of sdk::Communicator: the counters every backend's calls go into, counted the same way
// (by the stack's counting layer, comm/layers/counting_communicator.hpp), so that metrics mean the same thing
// whatever moved the data.
#include "comm/core/comm_ledger.hpp"

#include <gradsweep/sdk/services.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace gradsweep::comm {

class CollectiveForensics;
class FlightRecorder;
class PeerWaits;

class HostCommunicator : public sdk::Communicator {
 public:
  // Groups split from this communicator keep its ledger; closing it tells them it is gone.
  virtual ~HostCommunicator() { ledger_->close(); }
  // Counters since the last call; the trainer takes them once per step. Safe while a backend's worker
  // thread is adding to them. They include the traffic of the groups split from this communicator.
  CommStats take_stats() { return ledger_->take(); }
  // The groups' share of what the last take_stats() returned, per group name ("node", "split(1)").
  GroupStats take_group_stats() { return ledger_->take_groups(); }
  // The blocked time counted since the last take_stats(), without taking it: the timeline
  // (train/timeline.hpp) reads it at phase boundaries to split each phase into compute and waiting.
  double blocked_seconds_so_far() { return ledger_->blocked_so_far(); }
  // This communicator's name as a group (sdk::Group::name), empty for the job's own.
  const std::string& group_name() const { return ledger_->name(); }
  // Ok, or the error every call of a group returns once the communicator it was split from is gone.
  sdk::Status parent_status(const char* call = nullptr) const {
    if (!ledger_->parent_gone()) return sdk::Status::Ok();
    return sdk::Status::Error("group " + group_name() + ": " + (call != nullptr ? std::string(call) + ": " : "") +
                              "its parent communicator was destroyed (a group cannot outlive the communicator "
                              "it was split from)");
  }
  // The backend's record of its calls, for the timeline's communication spans; null when it keeps none.
  virtual const FlightRecorder* flight_recorder() { return nullptr; }
  // The recorder's part in a hang or a failure (dumps, requests, verdicts: comm/forensics/collective_forensics.hpp),
  // for the watchdog layer above it; null when nothing records this communicator's calls.
  virtual CollectiveForensics* forensics() { return nullptr; }
  // The backend under any layers of comm/layers/communicator_stack.hpp (itself for a bare backend), for what only
  // one backend has (the MPI backend's node split, the NCCL backend's device).
  virtual HostCommunicator& transport() { return *this; }
  const HostCommunicator& transport() const { return const_cast<HostCommunicator*>(this)->transport(); }
  // Where a transport that posts point-to-point requests inside its collectives (the MPI ring) says which
  // peers it waits on, for the hang verdict: the recording layer above hands in its forensics' list, held
  // (shared) for as long as the transport may still run a call. Before the first call; ignored by
  // backends that cannot say.
  virtual void report_peer_waits_to(std::shared_ptr<PeerWaits> /*waits*/) {}

  // A backend without sub-communicators (no kGroups in its features) refuses them by name.
  sdk::Status split(int /*color*/, int /*key*/, std::unique_ptr<sdk::Group>* /*group*/) noexcept override {
    return no_groups("split");
  }
  sdk::Status group(sdk::GroupKind /*kind*/, std::unique_ptr<sdk::Group>* /*group*/) noexcept override {
    return no_groups("group");
  }

 protected:
  sdk::Status no_groups(const char* call) const {
    return sdk::Status::Error(std::string(call) + ": the " + backend() + " backend has no sub-communicators");
  }
  // Adds to the counters from any thread (and, for a group, to its parent's): the counting layer, and a
  // backend that counts for itself (BuiltInLayers::counting, comm/layers/communicator_stack.hpp).
  void add_stats(const CommStats& delta) { ledger_->add(delta); }
  // Makes this communicator a group of `parent` named `name`: before its first call.
  void link_to_parent(HostCommunicator& parent, const std::string& name) {
    ledger_ = std::make_shared<CommLedger>(parent.ledger_, name);
  }
  // A layer around `inner` (comm/layers/communicator_layer.hpp) counts into, names and closes inner's ledger:
  // the stack is one communicator to the trainer, whichever layer holds the counters.
  void share_ledger_with(const HostCommunicator& inner) { ledger_ = inner.ledger_; }
  // For what counts after its communicator may be gone (an async call's worker: comm/layers/counting_communicator.hpp).
  const std::shared_ptr<CommLedger>& ledger() const { return ledger_; }

 private:
  std::shared_ptr<CommLedger> ledger_ = std::make_shared<CommLedger>();
};

// Rank 0 of 1: collectives are identities, point-to-point has no peer.
std::unique_ptr<HostCommunicator> make_local_communicator();

// Every rank of the MPI job (a duplicate of MPI_COMM_WORLD), for CPU tensors; initialises MPI first if
// nothing has (see comm/mpi/mpi_runtime.hpp). Throws std::runtime_error when MPI cannot start.
std::unique_ptr<HostCommunicator> make_mpi_communicator();

}  // namespace gradsweep::comm
