#pragma once
// In-process multi-rank tests: `run_ranks(n, body)` runs body on n ranks, each a thread of this process
// with its own sdk::Communicator over an in-memory transport (thread_communicator.hpp, rank_hub.hpp), as
// Gloo's tests run ranks as threads. Code written against the SDK (strategies' common parts, a plugin's
// protocol) runs on it unchanged, in milliseconds, with no mpirun; the MPI end-to-end tests stay the
// proof that the real backends behave the same.
//
//   run_ranks(4, [&](sdk::Communicator& comm) {
//     torch::Tensor t = torch::full({3}, comm.rank());
//     sdk::collective::allreduce(comm, t);  // 0+1+2+3 on every rank
//   });
//
// A parameter server's protocol the same way: rank 0 loops on comm.recv_any(t, kPushTag, &source) and
// answers with comm.send(reply, source, kPullTag); the workers send and recv. Sends never block, and
// RanksOptions::features can take kRecvAny away to see a strategy refuse a backend without it.
//
// Groups as on the MPI backend (ABI 1.8): with RanksOptions::ranks_per_node = 2 at 4 ranks,
// sdk::collective::group(comm, sdk::GroupKind::Node) is ranks {0, 1} or {2, 3}, AcrossNodes {0, 2} or
// {1, 3}, and split(color, key) any partition; what a hybrid strategy's parts need, without mpirun.
//
// A rank that throws ends the run: every rank waiting in a call, or making one later, gets an error
// naming the rank that threw, and run_ranks throws RankFailure with that rank and its message. A run in
// which the ranks cannot go on (a deadlock, a rank that returned without joining a collective, collectives
// left half-joined, a wait past the safety timeout) throws RankFailure with rank -1 and what each rank
// was waiting for. The body may take `sdk::Communicator&` or `comm::HostCommunicator&` (for take_stats()).
// One thread per rank calls its communicator (the body's); the deadlock check relies on it.
//
// What the body gets is the ThreadCommunicator inside the same layers every backend gets
// (comm/layers/communicator_stack.hpp: argument checks, the hang watchdog when RanksOptions::watchdog_seconds is
// set, the flight recorder: comm.flight_recorder() holds the rank's calls, and with a cell directory
// (comm::forensics::set_directory) a hang is judged from the ranks' dumps), so the layers are tested here,
// and the harness keeps no copy of their rules.
#include "support/thread_communicator.hpp"

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gradsweep::test {

class RankFailure : public std::runtime_error {
 public:
  RankFailure(int rank, const std::string& message) : std::runtime_error(message), rank_(rank) {}
  // The rank that failed first; -1 when none failed but the ranks could not go on.
  int rank() const { return rank_; }

 private:
  int rank_;
};

using RankBody = std::function<void(comm::HostCommunicator&)>;

// Every rank's outcome, for tests of failure paths.
struct RanksOutcome {
  std::optional<HubFailure> failure;  // the run's first failure, as run_ranks would throw it
  std::vector<std::string> errors;    // per rank: the message of the exception its body ended with, or ""
};

// Runs `body` on `ranks` thread-ranks and waits for all of them; nothing is rethrown.
RanksOutcome try_ranks(int ranks, const RankBody& body, const RanksOptions& options = {});

// Runs `body` on `ranks` thread-ranks; throws RankFailure for the run's first failure.
void run_ranks(int ranks, const RankBody& body, const RanksOptions& options = {});

}  // namespace gradsweep::test
