#pragma once
// The NCCL backend's class, shared by the files that implement it (nccl_communicator.cpp: set-up, waiting,
// the blocking calls; nccl_async.cpp: the asynchronous collectives and their requests;
// nccl_groups.cpp: split and group). Internal to host/comm: make_nccl_communicator()
// (comm/nccl/nccl_backend.hpp) is the way in, and nccl.h and cuda_runtime_api.h stay behind it.
#include "comm/core/byte_counting.hpp"
#include "comm/nccl/nccl_backend.hpp"
#include "comm/core/host_communicator.hpp"
#include "comm/nccl/nccl_buffer.hpp"
#include "comm/nccl/nccl_builtin_layers.hpp"
#include "comm/core/backend_features.hpp"

#include <gradsweep/sdk/status.hpp>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <array>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace gradsweep::comm {

class NcclRequest;

// The stream the caller's GPU work runs on (LibTorch's current stream, or the legacy default stream).
cudaStream_t nccl_caller_stream(int device);

class NcclCommunicator final : public HostCommunicator {
 public:
  using Clock = std::chrono::steady_clock;

  NcclCommunicator(int device_index, const MpiBootstrap& mpi_bootstrap);
  ~NcclCommunicator() override;

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  int local_rank() const noexcept override { return local_rank_; }
  int local_size() const noexcept override { return local_size_; }
  const char* backend() const noexcept override { return "nccl"; }
  const FlightRecorder* flight_recorder() override { return &forensics_.recorder(); }

  sdk::Status allreduce(torch::Tensor& tensor, sdk::ReduceOp op) noexcept override;
  sdk::Status broadcast(torch::Tensor& tensor, int root) noexcept override;
  sdk::Status allgather(const torch::Tensor& input, torch::Tensor& output) noexcept override;
  sdk::Status reduce_scatter(const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op) noexcept override;
  sdk::Status send(const torch::Tensor& tensor, int dst, int tag) noexcept override;
  sdk::Status recv(torch::Tensor& tensor, int src, int tag) noexcept override;
  sdk::Status barrier() noexcept override;
  sdk::Status allreduce_async(torch::Tensor& tensor, sdk::ReduceOp op,
                              std::unique_ptr<sdk::Request>* request) noexcept override;
  sdk::Status reduce_scatter_async(const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op,
                                   std::unique_ptr<sdk::Request>* request) noexcept override;
  sdk::Status allgather_async(const torch::Tensor& input, torch::Tensor& output,
                              std::unique_ptr<sdk::Request>* request) noexcept override;
  sdk::Status with_algorithm(sdk::Algorithm algorithm, sdk::Communicator** view) noexcept override;
  sdk::Status recv_any(torch::Tensor&, int, int*) noexcept override {
    return sdk::Status::Error(
        "recv_any: NCCL has no any-source receive, so a parameter server's inbox cannot run on the NCCL "
        "backend: asynchronous ps needs the MPI backend (runtime.comm: mpi)");
  }

  sdk::CommFeatures features() const noexcept override { return nccl_features(size_); }
  // Sub-communicators: ncclCommSplit (nccl_groups.cpp).
  sdk::Status split(int color, int key, std::unique_ptr<sdk::Group>* group) noexcept override;
  sdk::Status group(sdk::GroupKind kind, std::unique_ptr<sdk::Group>* group) noexcept override;

  std::string summary() const { return description_; }

 private:
  friend class NcclRequest;

  // One call: `body` checks its arguments, runs the collective and returns what it moved and how long
  // the collective itself took; a failed call counts its whole time and a call, no bytes.
  struct Outcome {
    Traffic traffic;
    double seconds;
  };
  template <class Body>
  sdk::Status counted(Body&& body) noexcept {
    if (sdk::Status gone = parent_status(); !gone.ok) return gone;  // a group whose parent is gone
    const auto t0 = Clock::now();
    std::optional<Outcome> outcome;
    sdk::Status status = sdk::guard([&] { outcome = body(); });
    CommStats delta;
    delta.calls = 1;
    delta.seconds = delta.blocked_seconds = outcome ? outcome->seconds : seconds_since(t0);
    if (outcome) {
      delta.bytes_sent = outcome->traffic.sent;
      delta.bytes_received = outcome->traffic.received;
      delta.payload_bytes = outcome->traffic.payload;
    }
    add_stats(delta);
    return status;
  }

  // An async call's argument checks (`check` throws): a failure counts as one call with no bytes.
  template <class Check>
  sdk::Status checked_async(const char* call, std::unique_ptr<sdk::Request>* request, Check&& check) noexcept {
    if (sdk::Status gone = parent_status(call); !gone.ok) return gone;
    const auto t0 = Clock::now();
    sdk::Status status = sdk::guard([&] {
      if (request == nullptr) throw std::invalid_argument(std::string(call) + ": request is null");
      check();
    });
    if (!status.ok) {
      CommStats delta;
      delta.calls = 1;
      delta.seconds = delta.blocked_seconds = seconds_since(t0);
      add_stats(delta);
    }
    return status;
  }
  // Enqueues one async NCCL call `call` (enqueue(stream) returns its ncclResult_t), recorded running from
  // here, and hands the caller a request that finishes `result`, holds `held` until done and counts `moved`.
  template <class Enqueue>
  sdk::Status enqueue_async(const CallShape& call, const char* function, nccl::DeviceBuffer result, torch::Tensor held,
                            Traffic moved, std::unique_ptr<sdk::Request>* request, Enqueue&& enqueue) noexcept;
  // Enqueues one NCCL call `call` on the caller's stream after that stream's pending work, and waits for
  // it, recorded in the flight recorder. Returns the seconds between enqueueing and completion.
  template <class Enqueue>
  double run_blocking(const CallShape& call, const char* function, Enqueue&& enqueue);
  // Waits for `event` (polling, so that NCCL's asynchronous errors surface), under the watchdog. A
  // failure while waiting goes through the flight recorder's exchange (NcclForensics::on_failure) first.
  void wait_for(cudaEvent_t event, const std::string& what);
  // The failure `wait_for` found, or nullopt while `event` is still pending.
  std::optional<std::string> poll(cudaEvent_t event, const std::string& what, bool* done);
  void check_cuda(cudaError_t e, const std::string& what, const char* function) const;
  void check_nccl(ncclResult_t r, const std::string& what, const char* function) const;
  std::string nccl_text(ncclResult_t r, const std::string& what, const char* function) const;
  std::string where() const {
    return " on rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
           (group_name().empty() ? "" : " in group " + group_name());
  }
  void check_peer(int peer, const std::string& call, const char* role) const;
  void check_usable() const;

  // From the watchdog's thread too: marks the async calls whose event completed done in the recorder,
  // so that a dump does not show a finished but un-waited call as the one this rank waits in.
  void refresh_async();
  // Completes every un-waited request before the communicator goes (nccl_async.cpp).
  void drain_async();

  // Where a group's ranks are: its members' places on their nodes and ranks in the job.
  struct GroupPlace {
    int local_rank = 0, local_size = 1;
    std::vector<int> job_ranks;
  };
  struct Bare {};
  // The watchdog and flight recorder only: what both constructors start from.
  explicit NcclCommunicator(Bare);
  // A group's: over `comm` (ncclCommSplit of `parent`'s), counted also in `parent`'s counters as `name`.
  NcclCommunicator(NcclCommunicator& parent, ncclComm_t comm, const std::string& name, const GroupPlace& place);
  // The async stream, the blocking calls' events and the barrier's word.
  void create_resources();
  // Every rank's {rank in the job, node}, gathered at the first split (collective, like split).
  const std::vector<std::array<int, 2>>& layout();
  // ncclCommSplit with `color` and `key` per rank of this communicator (every rank's, all >= 0).
  std::unique_ptr<sdk::Group> split_by(const std::vector<std::array<int, 2>>& color_key, const std::string& name);

  static double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  int job_rank_ = 0;  // this rank in the job (MPI_COMM_WORLD), for groups' names in dumps
  std::vector<std::array<int, 2>> layout_;
  int device_ = 0;
  std::string description_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t async_stream_ = nullptr;                 // allreduce_async's work, beside the caller's compute
  cudaEvent_t drained_ = nullptr, finished_ = nullptr;  // blocking calls' events (under issue_mutex_)
  void* barrier_word_ = nullptr;                        // barrier's 1-element allreduce
  // NCCL calls must be issued in the same order on every rank: one thread issues at a time.
  std::mutex issue_mutex_;
  std::mutex requests_mutex_;
  std::set<NcclRequest*> requests_;  // un-waited async calls, completed before the communicator goes
  // After NCCL reported an asynchronous error the communicator is unusable (NCCL's rule): every later
  // call fails at once with the first error rather than hang. Guarded by broken_mutex_.
  mutable std::mutex broken_mutex_;
  std::string broken_;
  // After requests_: its watchdog thread refreshes from them until it is joined, first.
  NcclForensics forensics_;
};

}  // namespace gradsweep::comm
