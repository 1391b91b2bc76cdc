#pragma once
// The MPI backend's class, shared by the files that implement it (mpi_communicator.cpp: set-up, native
// collectives, point-to-point; mpi_ring.cpp: the ring algorithms and with_algorithm;
// mpi_async.cpp: asynchronous collectives on the worker thread; mpi_groups.cpp:
// split and group). Internal to host/comm: make_mpi_communicator() is the way in.
#include "comm/core/algorithm_view.hpp"
#include "comm/algorithms/hierarchical.hpp"
#include "comm/algorithms/ring.hpp"
#include "comm/core/async_worker.hpp"
#include "comm/core/backend_features.hpp"
#include "comm/core/host_communicator.hpp"
#include "comm/mpi/mpi_node_split.hpp"
#include "comm/mpi/mpi_runtime.hpp"
#include "comm/forensics/peer_waits.hpp"

#include <gradsweep/sdk/status.hpp>

#include <mpi.h>

#include <functional>
#include <memory>
#include <string>

namespace gradsweep::comm {

class MpiCommunicator final : public HostCommunicator, public AlgorithmCalls {
 public:
  // The job's communicator: every rank of MPI_COMM_WORLD.
  MpiCommunicator() : MpiCommunicator(MPI_COMM_WORLD, nullptr, "") {}
  // A group's (sdk::Group, through HostGroup): the ranks of `base` (the parent's split, which the caller
  // still frees), counted also in `parent`'s counters under `name`. Collective over `base`.
  MpiCommunicator(MPI_Comm base, HostCommunicator* parent, const std::string& name);
  ~MpiCommunicator() override;

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  int local_rank() const noexcept override { return local_rank_; }
  int local_size() const noexcept override { return local_size_; }
  const char* backend() const noexcept override { return "mpi"; }
  // The ring transport says which neighbour it waits on.
  void report_peer_waits_to(std::shared_ptr<PeerWaits> waits) override { peer_waits_ = std::move(waits); }

  // Native: one MPI call each, on the main communicator.
  sdk::Status allreduce(torch::Tensor& tensor, sdk::ReduceOp op) noexcept override;
  sdk::Status broadcast(torch::Tensor& tensor, int root) noexcept override;
  sdk::Status allgather(const torch::Tensor& input, torch::Tensor& output) noexcept override;
  sdk::Status reduce_scatter(const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op) noexcept override;
  sdk::Status send(const torch::Tensor& tensor, int dst, int tag) noexcept override;
  sdk::Status recv(torch::Tensor& tensor, int src, int tag) noexcept override;
  sdk::Status recv_any(torch::Tensor& tensor, int tag, int* source) noexcept override;
  sdk::Status barrier() noexcept override;
  sdk::Status allreduce_async(torch::Tensor& tensor, sdk::ReduceOp op,
                              std::unique_ptr<sdk::Request>* request) noexcept override {
    return allreduce_async_by(sdk::Algorithm::Native, tensor, op, request);
  }
  sdk::Status reduce_scatter_async(const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op,
                                   std::unique_ptr<sdk::Request>* request) noexcept override {
    return reduce_scatter_async_by(sdk::Algorithm::Native, input, output, op, request);
  }
  sdk::Status allgather_async(const torch::Tensor& input, torch::Tensor& output,
                              std::unique_ptr<sdk::Request>* request) noexcept override {
    return allgather_async_by(sdk::Algorithm::Native, input, output, request);
  }
  sdk::Status with_algorithm(sdk::Algorithm algorithm, sdk::Communicator** view) noexcept override;
  sdk::CommFeatures features() const noexcept override { return mpi_features(size_); }
  // Sub-communicators: MPI_Comm_split of the main communicator (mpi_groups.cpp).
  sdk::Status split(int color, int key, std::unique_ptr<sdk::Group>* group) noexcept override;
  sdk::Status group(sdk::GroupKind kind, std::unique_ptr<sdk::Group>* group) noexcept override;

  // AlgorithmCalls: Native as above, Ring with comm/algorithms/ over MPI point-to-point.
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

 private:
  // Runs one call: `body` checks its arguments and communicates, throwing on failure (the counting layer
  // above counts it: comm/layers/counting_communicator.hpp).
  template <class Body>
  sdk::Status guarded(Body&& body) noexcept {
    if (sdk::Status unusable = usable(); !unusable.ok) return unusable;
    return sdk::guard(body);
  }
  // A group whose parent is gone, or whose MPI was finalised, refuses every call (HostCommunicator).
  sdk::Status usable() const {
    if (group_name().empty()) return sdk::Status::Ok();
    if (sdk::Status s = parent_status(); !s.ok) return s;
    if (!mpi::active()) return sdk::Status::Error("group " + group_name() + ": MPI was finalised");
    return sdk::Status::Ok();
  }
  // The group over the ranks of `split` (a fresh communicator this frees), named `name`.
  std::unique_ptr<sdk::Group> make_group(MPI_Comm split, const std::string& name);
  void check_peer(int peer, const std::string& call, const char* role) const;
  // send/recv: a peer other than this rank and a tag within the library's bound.
  void check_tag(int tag, const std::string& call) const;
  void check_point_to_point(int peer, int tag, const std::string& call, const char* role) const;

  // The native calls' MPI part on `comm` (comm_ from calling threads, async_comm_ on the worker).
  void native_allgather(MPI_Comm comm, const torch::Tensor& input, torch::Tensor& output, const std::string& call);
  void native_reduce_scatter(MPI_Comm comm, const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op,
                             const std::string& call);
  // Queues `body` on the worker and hands the caller its request.
  void enqueue_async(std::function<void()> body, std::unique_ptr<sdk::Request>* request);
  // The ring versions, on `comm` (ring_comm_ from calling threads, async_comm_ on the worker).
  void ring_allreduce(MPI_Comm comm, torch::Tensor& tensor, sdk::ReduceOp op, const std::string& call);
  // Hierarchical on `split` (split_ from calling threads, async_split_ on the worker); the flat ring on
  // `flat` when the nodes are uneven.
  void hierarchical_allreduce(const mpi::NodeSplit& split, MPI_Comm flat, torch::Tensor& tensor, sdk::ReduceOp op,
                              const std::string& call);
  // Completes every queued async operation.
  void drain_async();

  // Three duplicates of MPI_COMM_WORLD, so that traffic of different kinds never matches: comm_ for the
  // native collectives and point-to-point (a strategy's tags are its own), ring_comm_ for ring
  // collectives called by the caller's threads, async_comm_ for whatever the worker runs.
  MPI_Comm comm_ = MPI_COMM_NULL, ring_comm_ = MPI_COMM_NULL, async_comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  int tag_ub_ = 32767;  // the least MPI guarantees; the constructor asks for the real bound
  ring::Tuning ring_tuning_;
  std::shared_ptr<PeerWaits> peer_waits_;  // the recording layer's (report_peer_waits_to), or null
  std::unique_ptr<AlgorithmView> ring_view_, hierarchical_view_;
  // Node and cross-node communicators for hierarchical allreduce, split from ring_comm_ and async_comm_.
  std::unique_ptr<mpi::NodeSplit> split_, async_split_;
  bool split_logged_ = false;  // the split (or the flat-ring fallback) is logged once, not per with_algorithm

 public:
  // The phases of this rank's last blocking hierarchical allreduce (`gradsweep bench comm`).
  hierarchical::Phases last_hierarchical_phases() const { return last_phases_; }
  const mpi::NodeSplit& node_split() const { return *split_; }

 private:
  hierarchical::Phases last_phases_;
  // Last member: destroyed (joined) first, while everything its jobs use still exists.
  AsyncWorker worker_;
};

}  // namespace gradsweep::comm
