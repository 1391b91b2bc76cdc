// The NCCL backend: every rank of the job, CUDA tensors, one NCCL call per collective.
//
// MPI only bootstraps (rank 0's ncclUniqueId is broadcast over make_mpi_communicator()); the data plane
// is NCCL. Bytes are counted by the ring convention of nccl-tests' bus bandwidth, exactly as the MPI
// backend counts them (comm/byte_counting.hpp, docs/communicators.md).
//
// Timing. NCCL calls only enqueue work on a stream; a blocking call here first waits for the work
// already queued on the caller's stream (the step's compute, which must not be charged to
// communication), then enqueues the collective and waits for it, so `seconds` is the collective's own
// wall time, as with MPI. The _async calls enqueue on a dedicated stream and returns; its busy time is
// the GPU time between events around the collective, its blocked time is what wait() spends.
//
// Waiting polls the stream's event and ncclCommGetAsyncError, so a failure on another rank (a broken
// connection) becomes this call's error instead of a kernel that spins forever, and the collective
// watchdog (comm/collective_timeout.hpp) ends a job whose ranks never meet.
#include "comm/communicator_nccl.hpp"

#include "comm/byte_counting.hpp"
#include "comm/collective_timeout.hpp"
#include "comm/mpi_runtime.hpp"
#include "comm/nccl_buffer.hpp"
#include "comm/watched_call.hpp"
#include "config/comm_choice.hpp"
#include "config/environment.hpp"

#include <gradsweep/sdk/status.hpp>

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <spdlog/spdlog.h>

#if defined(GRADSWEEP_TORCH_CUDA) && __has_include(<c10/cuda/CUDAStream.h>)
#include <c10/cuda/CUDAStream.h>
#define GRADSWEEP_USE_TORCH_STREAM 1
#endif

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

namespace gradsweep::host {
namespace {

using nccl::describe;
using nccl::device_buffer;
using nccl::DeviceBuffer;
using nccl::nccl_op;
using Clock = std::chrono::steady_clock;

// A rank that waits this long inside one call is taken to be hung (GRADSWEEP_COMM_TIMEOUT overrides).
constexpr double kDefaultTimeoutSeconds = 600.0;
// Exit code of a job the watchdog ends, as for the MPI backend.
constexpr int kTimeoutExitCode = 3;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string cuda_text(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

// Before MPI runs, the launcher's environment is the only way to say which rank failed.
std::string launcher_rank_suffix() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (env::is_set(name)) return " (rank " + env::text(name) + ")";
  return "";
}

// The stream the caller's GPU work runs on: LibTorch's current stream when LibTorch has CUDA (so a
// collective follows the backward pass that produced its gradients without a device-wide sync), else
// the legacy default stream.
cudaStream_t caller_stream(int device) {
#ifdef GRADSWEEP_USE_TORCH_STREAM
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
#else
  (void)device;
  return cudaStreamLegacy;
#endif
}

// ---- the communicator ------------------------------------------------------------------------------

class NcclRequest;

class NcclCommunicator final : public HostCommunicator {
 public:
  explicit NcclCommunicator(int device_index);
  ~NcclCommunicator() override;

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  int local_rank() const noexcept override { return local_rank_; }
  int local_size() const noexcept override { return local_size_; }
  const char* backend() const noexcept override { return "nccl"; }

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
  sdk::Status with_algorithm(sdk::Algorithm algorithm, sdk::Communicator** view) noexcept override {
    // On one rank every algorithm is the identity (as on the local backend).
    if (algorithm == sdk::Algorithm::Native || size_ == 1) {
      *view = this;
      return sdk::Status::Ok();
    }
    if (algorithm == sdk::Algorithm::Hierarchical)
      return sdk::Status::Error(
          "with_algorithm(Hierarchical): gradsweep's hierarchical allreduce runs on the MPI backend (runtime.comm: "
          "mpi); NCCL already splits intra-node and inter-node traffic: use Algorithm::Native on the NCCL backend");
    return sdk::Status::Error(
        "with_algorithm(Ring): gradsweep's own ring runs on the MPI backend (runtime.comm: mpi); NCCL's "
        "allreduce is already a ring: use Algorithm::Native on the NCCL backend");
  }
  sdk::Status recv_any(torch::Tensor&, int, int*) noexcept override {
    return sdk::Status::Error(
        "recv_any: NCCL has no any-source receive, so a parameter server's inbox cannot run on the NCCL "
        "backend: asynchronous ps needs the MPI backend (runtime.comm: mpi)");
  }

  sdk::CommFeatures features() const noexcept override { return backend_features(CommBackend::Nccl, size_); }

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
  // Enqueues one async NCCL call (enqueue(stream, traffic) returns its ncclResult_t and sets what it
  // moves) and hands the caller a request that finishes `result` and holds `held` until done.
  template <class Enqueue>
  sdk::Status enqueue_async(const std::string& what, const char* function, DeviceBuffer result, torch::Tensor held,
                            std::unique_ptr<sdk::Request>* request, Enqueue&& enqueue) noexcept;
  // Enqueues one NCCL call on the caller's stream after that stream's pending work, and waits for it.
  // Returns the seconds between enqueueing and completion.
  template <class Enqueue>
  double run_blocking(const std::string& what, const char* function, Enqueue&& enqueue);
  // Waits for `event` (polling, so that NCCL's asynchronous errors surface), under the watchdog.
  void wait_for(cudaEvent_t event, const std::string& what);
  void check_cuda(cudaError_t e, const std::string& what, const char* function) const;
  void check_nccl(ncclResult_t r, const std::string& what, const char* function) const;
  std::string where() const { return " on rank " + std::to_string(rank_) + " of " + std::to_string(size_); }
  void check_peer(int peer, const std::string& call, const char* role) const;
  void on_timeout(const std::string& what, double waited) const;

  std::unique_ptr<HostCommunicator> bootstrap_;  // MPI under a launcher: the id's broadcast, ranks, MPI_Abort
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  int device_ = 0;
  std::string description_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t async_stream_ = nullptr;                 // allreduce_async's work, beside the caller's compute
  cudaEvent_t drained_ = nullptr, finished_ = nullptr;  // blocking calls' events (under issue_mutex_)
  void* barrier_word_ = nullptr;                        // barrier's 1-element allreduce
  // NCCL calls must be issued in the same order on every rank: one thread issues at a time.
  std::mutex issue_mutex_;
  CollectiveTimeout timeout_;
  std::mutex requests_mutex_;
  std::set<NcclRequest*> requests_;  // un-waited async calls, completed before the communicator goes
};

// An async NCCL call in flight on the async stream. Holds the tensors so their memory outlives it:
// `buffer` is the result (copied back by wait() when staged), `held` the input when it is another tensor.
class NcclRequest final : public sdk::Request {
 public:
  NcclRequest(NcclCommunicator& owner, DeviceBuffer buffer, torch::Tensor held, cudaEvent_t started, cudaEvent_t done,
              std::string what)
      : owner_(&owner),
        buffer_(std::move(buffer)),
        held_(std::move(held)),
        started_(started),
        done_event_(done),
        what_(std::move(what)) {
    const std::lock_guard<std::mutex> lock(owner.requests_mutex_);
    owner.requests_.insert(this);
  }
  ~NcclRequest() override {
    wait();  // destroying an un-waited request completes it
    cudaEventDestroy(started_);
    cudaEventDestroy(done_event_);
    if (owner_ != nullptr) {
      const std::lock_guard<std::mutex> lock(owner_->requests_mutex_);
      owner_->requests_.erase(this);
    }
  }

  // Synchronises with the collective (the host, and the caller's stream with it), then copies a staged
  // result back. Busy time is the GPU's time between the events around the collective.
  sdk::Status wait() noexcept override {
    if (done_) return result_;
    const auto t0 = Clock::now();
    double busy = 0.0;
    result_ = sdk::guard([&] {
      owner_->wait_for(done_event_, what_);
      owner_->check_cuda(cudaStreamWaitEvent(caller_stream(owner_->device_), done_event_, 0), what_,
                         "cudaStreamWaitEvent");
      float ms = 0.0f;
      if (cudaEventElapsedTime(&ms, started_, done_event_) == cudaSuccess) busy = ms / 1e3;
      buffer_.finish();
    });
    done_ = true;
    buffer_ = DeviceBuffer{};
    held_ = torch::Tensor();
    CommStats delta;
    delta.blocked_seconds = seconds_since(t0);
    delta.seconds = busy;
    owner_->add_stats(delta);
    return result_;
  }

  // The communicator is going away: finish now and stop referring to it.
  void complete_and_detach() {
    wait();
    owner_ = nullptr;
  }

 private:
  NcclCommunicator* owner_;
  DeviceBuffer buffer_;
  torch::Tensor held_;
  cudaEvent_t started_, done_event_;
  std::string what_;
  bool done_ = false;
  sdk::Status result_;
};

NcclCommunicator::NcclCommunicator(int device_index)
    : timeout_(std::chrono::duration<double>(comm_timeout_seconds(kDefaultTimeoutSeconds)),
               [this](const std::string& what, double waited) { on_timeout(what, waited); }) {
  // Checked before MPI starts: a machine without a GPU fails the same way on every rank, at once.
  int gpus = 0;
  const cudaError_t counted_gpus = cudaGetDeviceCount(&gpus);
  if (counted_gpus != cudaSuccess || gpus == 0)
    throw std::runtime_error("the NCCL backend needs a CUDA device; this machine has none (cudaGetDeviceCount: " +
                             (counted_gpus != cudaSuccess ? cuda_text(counted_gpus) : std::string("0 devices")) + ")" +
                             launcher_rank_suffix());
  if (mpi::launched_by_mpi()) {
    bootstrap_ = make_mpi_communicator();
    rank_ = bootstrap_->rank();
    size_ = bootstrap_->size();
    local_rank_ = bootstrap_->local_rank();
    local_size_ = bootstrap_->local_size();
  }
  device_ = device_index >= 0 ? device_index : local_rank_ % gpus;
  if (device_ >= gpus)
    throw std::runtime_error("NCCL backend" + where() + ": runtime.device asks for cuda:" + std::to_string(device_) +
                             " but this node shows " + std::to_string(gpus) + " GPU(s)");
  check_cuda(cudaSetDevice(device_), "communicator", "cudaSetDevice");

  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "communicator", "ncclGetUniqueId");
  if (bootstrap_) {
    torch::Tensor bytes = torch::empty({static_cast<std::int64_t>(sizeof id)}, torch::kByte);
    std::memcpy(bytes.data_ptr(), &id, sizeof id);
    sdk::check(bootstrap_->broadcast(bytes, 0));
    std::memcpy(&id, bytes.data_ptr(), sizeof id);
  }
  watched(timeout_, "ncclCommInitRank" + where(),
          [&] { check_nccl(ncclCommInitRank(&comm_, size_, id, rank_), "communicator", "ncclCommInitRank"); });
  check_cuda(cudaStreamCreateWithFlags(&async_stream_, cudaStreamNonBlocking), "communicator", "cudaStreamCreate");
  check_cuda(cudaEventCreateWithFlags(&drained_, cudaEventDisableTiming), "communicator", "cudaEventCreate");
  check_cuda(cudaEventCreateWithFlags(&finished_, cudaEventDisableTiming), "communicator", "cudaEventCreate");
  check_cuda(cudaMalloc(&barrier_word_, sizeof(float)), "communicator", "cudaMalloc");

  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, device_);
  int nccl_version = 0, cuda_runtime = 0;
  ncclGetVersion(&nccl_version);
  cudaRuntimeGetVersion(&cuda_runtime);
  description_ = "GPU " + std::to_string(device_) + " (" + prop.name + "), NCCL " +
                 std::to_string(nccl_version / 10000) + "." + std::to_string(nccl_version / 100 % 100) + "." +
                 std::to_string(nccl_version % 100) + ", CUDA runtime " + std::to_string(cuda_runtime / 1000) + "." +
                 std::to_string(cuda_runtime / 10 % 100);
}

NcclCommunicator::~NcclCommunicator() {
  std::set<NcclRequest*> pending;
  {
    const std::lock_guard<std::mutex> lock(requests_mutex_);
    pending.swap(requests_);
  }
  for (NcclRequest* r : pending) r->complete_and_detach();
  if (comm_ != nullptr) ncclCommDestroy(comm_);
  if (barrier_word_ != nullptr) cudaFree(barrier_word_);
  if (drained_ != nullptr) cudaEventDestroy(drained_);
  if (finished_ != nullptr) cudaEventDestroy(finished_);
  if (async_stream_ != nullptr) cudaStreamDestroy(async_stream_);
}

void NcclCommunicator::check_cuda(cudaError_t e, const std::string& what, const char* function) const {
  if (e != cudaSuccess) throw std::runtime_error(what + where() + ": " + function + " failed: " + cuda_text(e));
}

void NcclCommunicator::check_nccl(ncclResult_t r, const std::string& what, const char* function) const {
  if (r == ncclSuccess) return;
  std::string message = what + where() + ": " + function + " failed: " + ncclGetErrorString(r);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 13, 0)
  if (comm_ != nullptr)
    if (const char* last = ncclGetLastError(comm_); last != nullptr && *last != '\0')
      message += " (" + std::string(last) + ")";
#endif
  throw std::runtime_error(message + "; NCCL_DEBUG=WARN says more");
}

void NcclCommunicator::check_peer(int peer, const std::string& call, const char* role) const {
  if (peer < 0 || peer >= size_)
    throw std::invalid_argument(call + ": " + role + " rank " + std::to_string(peer) + " out of range (" +
                                std::to_string(size_) + " ranks)");
}

void NcclCommunicator::on_timeout(const std::string& what, double waited) const {
  mpi::end_hung_job(what, waited, timeout_.limit_seconds(), kTimeoutExitCode);
}

void NcclCommunicator::wait_for(cudaEvent_t event, const std::string& what) {
  watched(timeout_, what + where(), [&] {
    for (;;) {
      const cudaError_t state = cudaEventQuery(event);
      if (state == cudaSuccess) return;
      if (state != cudaErrorNotReady) check_cuda(state, what, "cudaEventQuery");
      ncclResult_t async_error = ncclSuccess;
      check_nccl(ncclCommGetAsyncError(comm_, &async_error), what, "ncclCommGetAsyncError");
      if (async_error != ncclSuccess && async_error != ncclInProgress)
        check_nccl(async_error, what, "NCCL (asynchronous)");
      std::this_thread::yield();
    }
  });
}

template <class Enqueue>
double NcclCommunicator::run_blocking(const std::string& what, const char* function, Enqueue&& enqueue) {
  const std::lock_guard<std::mutex> lock(issue_mutex_);
  check_cuda(cudaSetDevice(device_), what, "cudaSetDevice");  // the calling thread may be a strategy's own
  const cudaStream_t stream = caller_stream(device_);
  check_cuda(cudaEventRecord(drained_, stream), what, "cudaEventRecord");
  wait_for(drained_, what);  // the caller's queued compute: not communication time
  const auto t0 = Clock::now();
  check_nccl(enqueue(stream), what, function);
  check_cuda(cudaEventRecord(finished_, stream), what, "cudaEventRecord");
  wait_for(finished_, what);
  return seconds_since(t0);
}

sdk::Status NcclCommunicator::allreduce(torch::Tensor& tensor, sdk::ReduceOp op) noexcept {
  return counted([&] {
    DeviceBuffer b = device_buffer(tensor, device_, "allreduce", "the");
    const ncclRedOp_t nop = nccl_op(op);
    const double s = run_blocking(describe("allreduce", tensor), "ncclAllReduce", [&](cudaStream_t stream) {
      return ncclAllReduce(b.data(), b.data(), b.count, b.type, nop, comm_, stream);
    });
    b.finish();
    return Outcome{allreduce_traffic(b.bytes, size_), s};
  });
}

// Counted as a pipelined chain from the root, as the MPI backend counts it.
sdk::Status NcclCommunicator::broadcast(torch::Tensor& tensor, int root) noexcept {
  return counted([&] {
    DeviceBuffer b = device_buffer(tensor, device_, "broadcast", "the");
    check_peer(root, "broadcast", "root");
    const std::string what = describe("broadcast", tensor) + " from rank " + std::to_string(root);
    const double s = run_blocking(what, "ncclBroadcast", [&](cudaStream_t stream) {
      return ncclBroadcast(b.data(), b.data(), b.count, b.type, root, comm_, stream);
    });
    b.finish();
    const int last = (root + size_ - 1) % size_;
    return Outcome{Traffic{rank_ == last ? 0 : b.bytes, rank_ == root ? 0 : b.bytes, b.bytes}, s};
  });
}

sdk::Status NcclCommunicator::allgather(const torch::Tensor& input, torch::Tensor& output) noexcept {
  return counted([&] {
    DeviceBuffer in = device_buffer(input, device_, "allgather", "input");
    DeviceBuffer out = device_buffer(output, device_, "allgather", "output");
    nccl::prepare_allgather(in, out, rank_, size_, "allgather");
    const double s = run_blocking(
        describe("allgather", input) + " per rank", "ncclAllGather",
        [&](cudaStream_t stream) { return ncclAllGather(in.data(), out.data(), in.count, in.type, comm_, stream); });
    out.finish();
    return Outcome{scatter_gather_traffic(out.bytes, size_), s};
  });
}

sdk::Status NcclCommunicator::reduce_scatter(const torch::Tensor& input, torch::Tensor& output,
                                             sdk::ReduceOp op) noexcept {
  return counted([&] {
    DeviceBuffer in = device_buffer(input, device_, "reduce_scatter", "input");
    DeviceBuffer out = device_buffer(output, device_, "reduce_scatter", "output");
    nccl::prepare_reduce_scatter(in, out, rank_, size_, "reduce_scatter");
    const ncclRedOp_t nop = nccl_op(op);
    const double s = run_blocking(describe("reduce_scatter", input), "ncclReduceScatter", [&](cudaStream_t stream) {
      return ncclReduceScatter(in.data(), out.data(), out.count, out.type, nop, comm_, stream);
    });
    out.finish();  // also copies a scratch result into the caller's output
    return Outcome{scatter_gather_traffic(in.bytes, size_), s};
  });
}

// NCCL has no tags: messages between two ranks match in the order they were issued. The tag is
// checked (non-negative) so that code moving between backends keeps valid tags, and is otherwise unused.
sdk::Status NcclCommunicator::send(const torch::Tensor& tensor, int dst, int tag) noexcept {
  return counted([&] {
    DeviceBuffer b = device_buffer(tensor, device_, "send", "the");
    check_peer(dst, "send", "destination");
    if (dst == rank_) throw std::invalid_argument("send: rank " + std::to_string(dst) + " is this rank itself");
    if (tag < 0) throw std::invalid_argument("send: tag " + std::to_string(tag) + " is negative");
    const std::string what = describe("send", tensor) + " to rank " + std::to_string(dst);
    const double s = run_blocking(
        what, "ncclSend", [&](cudaStream_t stream) { return ncclSend(b.data(), b.count, b.type, dst, comm_, stream); });
    return Outcome{Traffic{b.bytes, 0, b.bytes}, s};
  });
}

sdk::Status NcclCommunicator::recv(torch::Tensor& tensor, int src, int tag) noexcept {
  return counted([&] {
    DeviceBuffer b = device_buffer(tensor, device_, "recv", "the");
    check_peer(src, "recv", "source");
    if (src == rank_) throw std::invalid_argument("recv: rank " + std::to_string(src) + " is this rank itself");
    if (tag < 0) throw std::invalid_argument("recv: tag " + std::to_string(tag) + " is negative");
    const std::string what = describe("recv", tensor) + " from rank " + std::to_string(src);
    const double s = run_blocking(
        what, "ncclRecv", [&](cudaStream_t stream) { return ncclRecv(b.data(), b.count, b.type, src, comm_, stream); });
    b.finish();
    return Outcome{Traffic{0, b.bytes, b.bytes}, s};
  });
}

// A 1-element allreduce: every rank must enter it before any leaves. Counted as no bytes, like MPI_Barrier.
sdk::Status NcclCommunicator::barrier() noexcept {
  return counted([&] {
    const double s = run_blocking("barrier", "ncclAllReduce", [&](cudaStream_t stream) {
      return ncclAllReduce(barrier_word_, barrier_word_, 1, ncclFloat32, ncclSum, comm_, stream);
    });
    return Outcome{Traffic{}, s};
  });
}

// Enqueued on the async stream after an event on the caller's stream, so it starts once the tensors
// it reads are computed and runs beside whatever the caller queues next. Bytes count at the start;
// the time inside this call is blocked time; its busy time is added by wait().
template <class Enqueue>
sdk::Status NcclCommunicator::enqueue_async(const std::string& what, const char* function, DeviceBuffer result,
                                            torch::Tensor held, std::unique_ptr<sdk::Request>* request,
                                            Enqueue&& enqueue) noexcept {
  const auto t0 = Clock::now();
  std::optional<Traffic> traffic;
  sdk::Status status = sdk::guard([&] {
    const std::lock_guard<std::mutex> lock(issue_mutex_);
    check_cuda(cudaSetDevice(device_), what, "cudaSetDevice");
    cudaEvent_t ready = nullptr, started = nullptr, done = nullptr;
    check_cuda(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), what, "cudaEventCreate");
    const auto destroy_ready = std::unique_ptr<CUevent_st, decltype(&cudaEventDestroy)>(ready, &cudaEventDestroy);
    check_cuda(cudaEventCreate(&started), what, "cudaEventCreate");
    check_cuda(cudaEventCreate(&done), what, "cudaEventCreate");
    // The request owns the events from here.
    auto pending = std::make_unique<NcclRequest>(*this, result, std::move(held), started, done, what);
    check_cuda(cudaEventRecord(ready, caller_stream(device_)), what, "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(async_stream_, ready, 0), what, "cudaStreamWaitEvent");
    check_cuda(cudaEventRecord(started, async_stream_), what, "cudaEventRecord");
    Traffic moved;
    check_nccl(enqueue(async_stream_, moved), what, function);
    check_cuda(cudaEventRecord(done, async_stream_), what, "cudaEventRecord");
    *request = std::move(pending);
    traffic = moved;
  });
  CommStats delta;
  delta.calls = 1;
  delta.blocked_seconds = seconds_since(t0);
  if (traffic) {
    delta.bytes_sent = traffic->sent;
    delta.bytes_received = traffic->received;
    delta.payload_bytes = traffic->payload;
  }
  add_stats(delta);
  return status;
}

// Arguments are checked before anything is enqueued; a failure there is counted as a call with no bytes.
sdk::Status NcclCommunicator::allreduce_async(torch::Tensor& tensor, sdk::ReduceOp op,
                                              std::unique_ptr<sdk::Request>* request) noexcept {
  std::optional<DeviceBuffer> b;
  ncclRedOp_t nop{};
  const sdk::Status checked = checked_async("allreduce_async", request, [&] {
    b = device_buffer(tensor, device_, "allreduce_async", "the");
    nop = nccl_op(op);
  });
  if (!checked.ok) return checked;
  return enqueue_async(describe("allreduce_async", tensor), "ncclAllReduce", *b, {}, request,
                       [&](cudaStream_t stream, Traffic& moved) {
                         moved = allreduce_traffic(b->bytes, size_);
                         return ncclAllReduce(b->data(), b->data(), b->count, b->type, nop, comm_, stream);
                       });
}

sdk::Status NcclCommunicator::reduce_scatter_async(const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op,
                                                   std::unique_ptr<sdk::Request>* request) noexcept {
  std::optional<DeviceBuffer> in, out;
  ncclRedOp_t nop{};
  const sdk::Status checked = checked_async("reduce_scatter_async", request, [&] {
    in = device_buffer(input, device_, "reduce_scatter_async", "input");
    out = device_buffer(output, device_, "reduce_scatter_async", "output");
    nccl::prepare_reduce_scatter(*in, *out, rank_, size_, "reduce_scatter_async");
    nop = nccl_op(op);
  });
  if (!checked.ok) return checked;
  return enqueue_async(describe("reduce_scatter_async", input), "ncclReduceScatter", *out, in->device, request,
                       [&](cudaStream_t stream, Traffic& moved) {
                         moved = scatter_gather_traffic(in->bytes, size_);
                         return ncclReduceScatter(in->data(), out->data(), out->count, out->type, nop, comm_, stream);
                       });
}

sdk::Status NcclCommunicator::allgather_async(const torch::Tensor& input, torch::Tensor& output,
                                              std::unique_ptr<sdk::Request>* request) noexcept {
  std::optional<DeviceBuffer> in, out;
  const sdk::Status checked = checked_async("allgather_async", request, [&] {
    in = device_buffer(input, device_, "allgather_async", "input");
    out = device_buffer(output, device_, "allgather_async", "output");
    nccl::prepare_allgather(*in, *out, rank_, size_, "allgather_async");
  });
  if (!checked.ok) return checked;
  return enqueue_async(describe("allgather_async", input) + " per rank", "ncclAllGather", *out, in->device, request,
                       [&](cudaStream_t stream, Traffic& moved) {
                         moved = scatter_gather_traffic(out->bytes, size_);
                         return ncclAllGather(in->data(), out->data(), in->count, in->type, comm_, stream);
                       });
}

}  // namespace

std::unique_ptr<HostCommunicator> make_nccl_communicator(int device_index) {
  return std::make_unique<NcclCommunicator>(device_index);
}

std::string describe_nccl_communicator(const HostCommunicator& comm) {
  const auto* nccl = dynamic_cast<const NcclCommunicator*>(&comm);
  return nccl != nullptr ? nccl->summary() : "";
}

}  // namespace gradsweep::host
