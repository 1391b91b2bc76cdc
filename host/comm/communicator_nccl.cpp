// The NCCL backend: every rank of the job, CUDA tensors, one NCCL call per collective.
//
// MPI only bootstraps (rank 0's ncclUniqueId is broadcast over make_mpi_communicator()); the data plane
// is NCCL. Bytes are counted by the ring convention of nccl-tests' bus bandwidth, exactly as the MPI
// backend counts them (comm/byte_counting.hpp, docs/communicators.md).
//
// Timing. NCCL calls only enqueue work on a stream; a blocking call here first waits for the work
// already queued on the caller's stream (the step's compute, which must not be charged to
// communication), then enqueues the collective and waits for it, so `seconds` is the collective's own
// wall time, as with MPI. allreduce_async enqueues on a dedicated stream and returns; its busy time is
// the GPU time between events around the collective, its blocked time is what wait() spends.
//
// Waiting polls the stream's event and ncclCommGetAsyncError, so a failure on another rank (a broken
// connection) becomes this call's error instead of a kernel that spins forever, and the collective
// watchdog (comm/collective_timeout.hpp) ends a job whose ranks never meet.
#include "comm/communicator_nccl.hpp"

#include "comm/byte_counting.hpp"
#include "comm/collective_timeout.hpp"
#include "comm/dtype_name.hpp"
#include "comm/mpi_runtime.hpp"
#include "config/comm_choice.hpp"

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
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return std::string(" (rank ") + v + ")";
  return "";
}

// ---- tensors as NCCL buffers -----------------------------------------------------------------------

std::optional<ncclDataType_t> nccl_type(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat: return ncclFloat32;
    case torch::kDouble: return ncclFloat64;
    case torch::kBFloat16: return ncclBfloat16;
    case torch::kHalf: return ncclFloat16;
    case torch::kInt: return ncclInt32;
    case torch::kLong: return ncclInt64;
    case torch::kByte: return ncclUint8;
    default: return std::nullopt;
  }
}

ncclRedOp_t nccl_op(sdk::ReduceOp op) {
  switch (op) {
    case sdk::ReduceOp::Sum: return ncclSum;
    case sdk::ReduceOp::Max: return ncclMax;
    case sdk::ReduceOp::Min: return ncclMin;
  }
  throw std::invalid_argument("unknown ReduceOp " + std::to_string(static_cast<unsigned>(op)));
}

std::string describe(const std::string& call, const torch::Tensor& t) {
  return call + " of " + std::to_string(t.numel()) + " " + dtype_name(t.scalar_type()) + " (" +
         std::to_string(t.numel() * t.element_size()) + " bytes)";
}

bool overlap(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0) return false;
  const auto* a0 = static_cast<const char*>(a.data_ptr());
  const auto* b0 = static_cast<const char*>(b.data_ptr());
  return a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
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

// A tensor as NCCL sees it. A CUDA tensor on this rank's GPU is used in place; a CPU tensor (the
// trainer's scalar reductions, a strategy's small bookkeeping) is staged through the GPU and copied
// back by finish(). Staging costs two copies: strategies should hand CUDA tensors.
struct DeviceBuffer {
  torch::Tensor user;    // what the caller passed
  torch::Tensor device;  // what NCCL reads and writes: `user` itself unless staged
  ncclDataType_t type;
  std::size_t count;
  std::uint64_t bytes;
  bool staged() const { return !user.is_same(device); }
  void* data() const { return count == 0 ? nullptr : device.data_ptr(); }
  // Copies a staged result back to the caller's tensor.
  void finish() {
    if (staged()) user.copy_(device);
  }
};

DeviceBuffer device_buffer(const torch::Tensor& t, int gpu, const std::string& call, const char* role) {
  const std::string who = call + ": " + role + " tensor";
  if (!t.defined()) throw std::invalid_argument(who + " is undefined");
  if (!t.is_contiguous())
    throw std::invalid_argument(who + " is not contiguous (sizes " + c10::str(t.sizes()) + ", strides " +
                                c10::str(t.strides()) + "); pass .contiguous() or a flat buffer");
  const std::optional<ncclDataType_t> type = nccl_type(t.scalar_type());
  if (!type)
    throw std::invalid_argument(who + " has dtype " + std::string(dtype_name(t.scalar_type())) +
                                "; the NCCL backend supports float32, float64, bfloat16, float16, int32, int64, uint8");
  const auto bytes = static_cast<std::uint64_t>(t.numel()) * t.element_size();
  const auto count = static_cast<std::size_t>(t.numel());
  if (t.device().is_cuda()) {
    if (t.device().index() != gpu)
      throw std::invalid_argument(who + " is on " + t.device().str() + " but this rank's NCCL communicator is on cuda:" +
                                  std::to_string(gpu));
    return {t, t, *type, count, bytes};
  }
  if (!t.device().is_cpu())
    throw std::invalid_argument(who + " is on " + t.device().str() + "; the NCCL backend takes CUDA (or CPU) tensors");
  return {t, t.to(torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(gpu))), *type, count, bytes};
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
  cudaStream_t async_stream_ = nullptr;  // allreduce_async's work, beside the caller's compute
  cudaEvent_t drained_ = nullptr, finished_ = nullptr;  // blocking calls' events (under issue_mutex_)
  void* barrier_word_ = nullptr;                        // barrier's 1-element allreduce
  // NCCL calls must be issued in the same order on every rank: one thread issues at a time.
  std::mutex issue_mutex_;
  CollectiveTimeout timeout_;
  std::mutex requests_mutex_;
  std::set<NcclRequest*> requests_;  // un-waited async calls, completed before the communicator goes
};

// An ncclAllReduce in flight on the async stream. Holds the tensors so their memory outlives it.
class NcclRequest final : public sdk::Request {
 public:
  NcclRequest(NcclCommunicator& owner, DeviceBuffer buffer, cudaEvent_t started, cudaEvent_t done, std::string what)
      : owner_(&owner), buffer_(std::move(buffer)), started_(started), done_event_(done), what_(std::move(what)) {
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
                             (counted_gpus != cudaSuccess ? cuda_text(counted_gpus) : std::string("0 devices")) +
                             ")" + launcher_rank_suffix());
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
  {
    const CollectiveTimeout::Scope watch(timeout_, "ncclCommInitRank" + where());
    check_nccl(ncclCommInitRank(&comm_, size_, id, rank_), "communicator", "ncclCommInitRank");
  }
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
    if (const char* last = ncclGetLastError(comm_); last != nullptr && *last != '\0') message += " (" + std::string(last) + ")";
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
  const CollectiveTimeout::Scope watch(timeout_, what + where());
  for (;;) {
    const cudaError_t state = cudaEventQuery(event);
    if (state == cudaSuccess) return;
    if (state != cudaErrorNotReady) check_cuda(state, what, "cudaEventQuery");
    ncclResult_t async_error = ncclSuccess;
    check_nccl(ncclCommGetAsyncError(comm_, &async_error), what, "ncclCommGetAsyncError");
    if (async_error != ncclSuccess && async_error != ncclInProgress) check_nccl(async_error, what, "NCCL (asynchronous)");
    std::this_thread::yield();
  }
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
    if (input.scalar_type() != output.scalar_type())
      throw std::invalid_argument(std::string("allgather: input is ") + dtype_name(input.scalar_type()) +
                                  " but output is " + dtype_name(output.scalar_type()));
    if (output.numel() != input.numel() * size_)
      throw std::invalid_argument("allgather: output has " + std::to_string(output.numel()) +
                                  " elements; expected size() x input = " + std::to_string(size_) + " x " +
                                  std::to_string(input.numel()));
    // NCCL allows the input to be this rank's own slot of the output; any other overlap is copied first.
    const bool own_slot = in.count > 0 && !in.staged() && !out.staged() &&
                          in.data() == static_cast<char*>(out.data()) + static_cast<std::uint64_t>(rank_) * in.bytes;
    if (!own_slot && !in.staged() && !out.staged() && overlap(input, output)) in.device = input.clone();
    const double s = run_blocking(describe("allgather", input) + " per rank", "ncclAllGather", [&](cudaStream_t stream) {
      return ncclAllGather(in.data(), out.data(), in.count, in.type, comm_, stream);
    });
    out.finish();
    return Outcome{scatter_gather_traffic(out.bytes, size_), s};
  });
}

sdk::Status NcclCommunicator::reduce_scatter(const torch::Tensor& input, torch::Tensor& output,
                                             sdk::ReduceOp op) noexcept {
  return counted([&] {
    DeviceBuffer in = device_buffer(input, device_, "reduce_scatter", "input");
    DeviceBuffer out = device_buffer(output, device_, "reduce_scatter", "output");
    if (input.scalar_type() != output.scalar_type())
      throw std::invalid_argument(std::string("reduce_scatter: input is ") + dtype_name(input.scalar_type()) +
                                  " but output is " + dtype_name(output.scalar_type()));
    if (input.numel() != output.numel() * size_)
      throw std::invalid_argument("reduce_scatter: input has " + std::to_string(input.numel()) +
                                  " elements; expected size() x output = " + std::to_string(size_) + " x " +
                                  std::to_string(output.numel()));
    const ncclRedOp_t nop = nccl_op(op);
    // NCCL allows the output to be this rank's slot of the input; any other overlap reduces into scratch.
    const bool own_slot = out.count > 0 && !in.staged() && !out.staged() &&
                          out.data() == static_cast<char*>(in.data()) + static_cast<std::uint64_t>(rank_) * out.bytes;
    const bool scratch = !own_slot && !in.staged() && !out.staged() && overlap(input, output);
    if (scratch) out.device = torch::empty_like(output);
    const double s = run_blocking(describe("reduce_scatter", input), "ncclReduceScatter", [&](cudaStream_t stream) {
      return ncclReduceScatter(in.data(), out.data(), out.count, out.type, nop, comm_, stream);
    });
    out.finish();  // also copies the scratch result into the caller's output
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
    const double s = run_blocking(what, "ncclSend", [&](cudaStream_t stream) {
      return ncclSend(b.data(), b.count, b.type, dst, comm_, stream);
    });
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
    const double s = run_blocking(what, "ncclRecv", [&](cudaStream_t stream) {
      return ncclRecv(b.data(), b.count, b.type, src, comm_, stream);
    });
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

// Enqueued on the async stream after an event on the caller's stream, so it starts once the gradients
// it reduces are computed and runs beside whatever the caller queues next. Bytes count at the start;
// the time inside this call is blocked time; its busy time is added by wait().
sdk::Status NcclCommunicator::allreduce_async(torch::Tensor& tensor, sdk::ReduceOp op,
                                              std::unique_ptr<sdk::Request>* request) noexcept {
  const auto t0 = Clock::now();
  std::optional<Traffic> traffic;
  sdk::Status status = sdk::guard([&] {
    if (request == nullptr) throw std::invalid_argument("allreduce_async: request is null");
    DeviceBuffer b = device_buffer(tensor, device_, "allreduce_async", "the");
    const ncclRedOp_t nop = nccl_op(op);
    const std::string what = describe("allreduce_async", tensor);
    const std::lock_guard<std::mutex> lock(issue_mutex_);
    check_cuda(cudaSetDevice(device_), what, "cudaSetDevice");
    cudaEvent_t ready = nullptr, started = nullptr, done = nullptr;
    check_cuda(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), what, "cudaEventCreate");
    const auto destroy_ready = std::unique_ptr<CUevent_st, decltype(&cudaEventDestroy)>(ready, &cudaEventDestroy);
    check_cuda(cudaEventCreate(&started), what, "cudaEventCreate");
    check_cuda(cudaEventCreate(&done), what, "cudaEventCreate");
    auto pending = std::make_unique<NcclRequest>(*this, b, started, done, what);  // owns the events from here
    check_cuda(cudaEventRecord(ready, caller_stream(device_)), what, "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(async_stream_, ready, 0), what, "cudaStreamWaitEvent");
    check_cuda(cudaEventRecord(started, async_stream_), what, "cudaEventRecord");
    check_nccl(ncclAllReduce(b.data(), b.data(), b.count, b.type, nop, comm_, async_stream_), what, "ncclAllReduce");
    check_cuda(cudaEventRecord(done, async_stream_), what, "cudaEventRecord");
    *request = std::move(pending);
    traffic = allreduce_traffic(b.bytes, size_);
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

}  // namespace

std::unique_ptr<HostCommunicator> make_nccl_communicator(int device_index) {
  return std::make_unique<NcclCommunicator>(device_index);
}

std::string describe_nccl_communicator(const HostCommunicator& comm) {
  const auto* nccl = dynamic_cast<const NcclCommunicator*>(&comm);
  return nccl != nullptr ? nccl->summary() : "";
}

}  // namespace gradsweep::host
