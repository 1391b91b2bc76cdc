#pragma once
// The sdk::Communicator of one thread-rank (thread_ranks.hpp) over the in-memory RankHub: every call of
// the SDK with the MPI backend's rules, so that code written against the SDK runs on it unchanged.
//
//   - the MPI backend's own argument checks (CPU, supported dtype, count) with the same wording; the rules
//     every backend shares (defined, contiguous, sizes, ranks, tags, features) are the stack's argument-check
//     layer's (comm/layers/checked_communicator.hpp), which run_ranks puts in front of this communicator;
//   - collectives matched by call order per rank, blocking calls and async calls in separate orders (the
//     MPI backend runs async calls on a communicator of their own); the ranks' calls must agree on kind,
//     algorithm, dtype, size, op and root, or every rank gets an error naming each rank's call (where MPI
//     would hang or misread);
//   - with_algorithm's views (ring, hierarchical) compute what the native call computes;
//   - send is eager (copied at once, never blocks), recv and recv_any take messages in MPI's order, and a
//     message whose length or dtype differs from the receiving tensor is an error naming both;
//   - bytes, calls and times counted by the stack's counting layer (comm/layers/counting_communicator.hpp), as on
//     every backend (take_stats); times are real but mean little here (a collective takes as long as its
//     slowest rank takes to join it);
//   - features() as configured (all of them by default), and a call to a missing feature fails;
//   - split and group (ABI 1.8) make groups as the host's backends do (comm::HostGroup over a
//     ThreadCommunicator on a context of the same hub, rank_hub.hpp), with every call above; GroupKind::Node
//     is the ranks of RanksOptions::ranks_per_node's node, AcrossNodes the ranks of every node with this
//     local rank. A group's bytes count in the group and in its parent (HostCommunicator's ledger), and a
//     group whose parent is gone fails by name.
#include "support/rank_hub.hpp"

#include "comm/core/algorithm_view.hpp"
#include "comm/core/host_communicator.hpp"
#include "comm/layers/watchdog_communicator.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gradsweep::test {

inline constexpr sdk::CommFeatures kAllCommFeatures = sdk::kPointToPoint | sdk::kRecvAny | sdk::kRingAlgorithm |
                                                      sdk::kHierarchicalAlgorithm | sdk::kAsyncCollectives |
                                                      sdk::kGroups;

struct RanksOptions {
  // Ranks per node, for local_rank() and local_size(): 0 puts every rank on one node.
  int ranks_per_node = 0;
  // What features() answers; calls to a feature left out fail (e.g. no kRecvAny, as on NCCL).
  sdk::CommFeatures features = kAllCommFeatures;
  // A rank that waits this long inside one call ends the run (a safety net: deadlocks end at once).
  std::chrono::milliseconds timeout{30000};
  // The stack's hang layer (comm/layers/watchdog_communicator.hpp): a call still running after this many seconds
  // is reported to on_hang (by rank, call and sequence number); 0 leaves it off, and the hub's own
  // deadlock detection and `timeout` above end a stuck run.
  double watchdog_seconds = 0;
  comm::HangHandler on_hang = comm::end_process_on_hang;
  // How long an overdue rank waits for the other ranks' flight-recorder dumps (the stack's option).
  double dump_grace_seconds = comm::WatchdogCommunicator::kDefaultDumpGraceSeconds;
};

// Which ranks a communicator has: its hub context and its members' world ranks, in its rank order.
struct ThreadRanksShape {
  int context = 0;
  std::string name;  // "" for every rank; the group's name
  std::vector<int> members;
};

class ThreadCommunicator final : public comm::HostCommunicator, private comm::AlgorithmCalls {
 public:
  // World rank `rank` of every rank of `hub`.
  ThreadCommunicator(RankHub& hub, int rank, const RanksOptions& options);
  // A group's: `world_rank` among `shape`'s members; its counts are also added to `parent`'s, under
  // shape.name.
  ThreadCommunicator(RankHub& hub, ThreadRanksShape shape, int world_rank, const RanksOptions& options,
                     ThreadCommunicator& parent);

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  int local_rank() const noexcept override { return local_rank_; }
  int local_size() const noexcept override { return local_size_; }
  const char* backend() const noexcept override { return "threads"; }

  sdk::Status allreduce(torch::Tensor& tensor, sdk::ReduceOp op) noexcept override;
  sdk::Status broadcast(torch::Tensor& tensor, int root) noexcept override;
  sdk::Status allgather(const torch::Tensor& input, torch::Tensor& output) noexcept override;
  sdk::Status reduce_scatter(const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op) noexcept override;
  sdk::Status send(const torch::Tensor& tensor, int dst, int tag) noexcept override;
  sdk::Status recv(torch::Tensor& tensor, int src, int tag) noexcept override;
  sdk::Status barrier() noexcept override;
  sdk::Status allreduce_async(torch::Tensor& tensor, sdk::ReduceOp op,
                              std::unique_ptr<sdk::Request>* request) noexcept override;
  sdk::Status with_algorithm(sdk::Algorithm algorithm, sdk::Communicator** view) noexcept override;
  sdk::Status recv_any(torch::Tensor& tensor, int tag, int* source) noexcept override;
  sdk::Status reduce_scatter_async(const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op,
                                   std::unique_ptr<sdk::Request>* request) noexcept override;
  sdk::Status allgather_async(const torch::Tensor& input, torch::Tensor& output,
                              std::unique_ptr<sdk::Request>* request) noexcept override;
  sdk::CommFeatures features() const noexcept override { return features_; }
  sdk::Status split(int color, int key, std::unique_ptr<sdk::Group>* group) noexcept override;
  sdk::Status group(sdk::GroupKind kind, std::unique_ptr<sdk::Group>* group) noexcept override;

  int world_rank() const { return world_rank_; }

 private:
  sdk::Status allreduce_by(sdk::Algorithm algorithm, torch::Tensor& tensor, sdk::ReduceOp op) noexcept override;
  sdk::Status allreduce_async_by(sdk::Algorithm algorithm, torch::Tensor& tensor, sdk::ReduceOp op,
                                 std::unique_ptr<sdk::Request>* request) noexcept override;
  sdk::Status allgather_by(sdk::Algorithm algorithm, const torch::Tensor& input,
                           torch::Tensor& output) noexcept override;
  sdk::Status reduce_scatter_by(sdk::Algorithm algorithm, const torch::Tensor& input, torch::Tensor& output,
                                sdk::ReduceOp op) noexcept override;
  sdk::Status reduce_scatter_async_by(sdk::Algorithm algorithm, const torch::Tensor& input, torch::Tensor& output,
                                      sdk::ReduceOp op, std::unique_ptr<sdk::Request>* request) noexcept override;
  sdk::Status allgather_async_by(sdk::Algorithm algorithm, const torch::Tensor& input, torch::Tensor& output,
                                 std::unique_ptr<sdk::Request>* request) noexcept override;

  // This rank's part in a collective: joined and waited for (blocking), or joined with a request (async).
  void blocking(CollectiveCall call);
  void issue(CollectiveCall call, std::unique_ptr<sdk::Request>* request);
  template <class Body>
  sdk::Status guarded(Body&& body) noexcept;

  CollectiveCall reduction(CollectiveKind kind, sdk::Algorithm algorithm, const torch::Tensor& input,
                           const torch::Tensor& output, sdk::ReduceOp op, const std::string& call) const;
  CollectiveCall gather(sdk::Algorithm algorithm, const torch::Tensor& input, const torch::Tensor& output,
                        const std::string& call) const;
  Message received(const std::string& call, int source, int tag, const torch::Tensor& tensor);
  int node_of(int world_rank) const { return world_rank / per_node_; }
  std::unique_ptr<sdk::Group> make_group(int color, int key, const std::string& name, const std::string& call);

  RankHub& hub_;
  const RanksOptions options_;
  const ThreadRanksShape shape_;
  const int world_rank_, rank_, size_, per_node_;
  int local_rank_ = 0, local_size_ = 0;
  const sdk::CommFeatures features_;
  comm::AlgorithmView ring_view_, hierarchical_view_;
  std::uint64_t splits_ = 0;  // split and group calls so far
};

}  // namespace gradsweep::test
