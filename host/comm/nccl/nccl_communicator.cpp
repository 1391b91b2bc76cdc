// The NCCL backend: every rank of the job, CUDA tensors, one NCCL call per collective. This file: set-up,
// waiting, the blocking calls; the asynchronous collectives are in nccl_async.cpp.
//
// MPI only bootstraps (rank 0's ncclUniqueId is broadcast over the registry's MPI backend); the data plane
// is NCCL. Bytes are counted by the ring convention of nccl-tests' bus bandwidth, exactly as the MPI
// backend counts them (comm/core/byte_counting.hpp, docs/communicators.md).
//
// Timing. NCCL calls only enqueue work on a stream; a blocking call here first waits for the work
// already queued on the caller's stream (the step's compute, which must not be charged to
// communication), then enqueues the collective and waits for it, so `seconds` is the collective's own
// wall time, as with MPI. The _async calls enqueue on a dedicated stream and return; their busy time is
// the GPU time between events around the collective, their blocked time is what wait() spends.
//
// Waiting polls the stream's event and ncclCommGetAsyncError, so a failure on another rank (a broken
// connection) becomes this call's error instead of a kernel that spins forever, and the collective
// watchdog (comm/forensics/collective_timeout.hpp) ends a job whose ranks never meet. Either way the flight
// recorder (comm/nccl/nccl_builtin_layers.hpp) first says which rank did not reach which collective, as on MPI.
#include "comm/nccl/nccl_communicator.hpp"

#include "comm/forensics/collective_timeout.hpp"
#include "comm/mpi/mpi_runtime.hpp"
#include "comm/nccl/nccl_watched_call.hpp"
#include "env/environment.hpp"

#include <spdlog/spdlog.h>

#if defined(GRADSWEEP_TORCH_CUDA) && __has_include(<c10/cuda/CUDAStream.h>)
#include <c10/cuda/CUDAStream.h>
#define GRADSWEEP_USE_TORCH_STREAM 1
#endif

#include <cstring>
#include <thread>

namespace gradsweep::comm {
namespace {

using nccl::device_buffer;
using nccl::DeviceBuffer;
using nccl::nccl_op;

// A rank that waits this long inside one call is taken to be hung (GRADSWEEP_COMM_TIMEOUT overrides).
// Exit code of a job the watchdog ends, as for the MPI backend.
constexpr int kTimeoutExitCode = 3;
// How long a rank whose watchdog fired, or whose collective failed, waits for the other ranks' dumps.
constexpr double kDumpGraceSeconds = 5.0;

std::string cuda_text(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

// Before MPI runs, the launcher's environment is the only way to say which rank failed.
std::string launcher_rank_suffix() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (env::is_set(name)) return " (rank " + env::text(name) + ")";
  return "";
}

}  // namespace

// The stream the caller's GPU work runs on: LibTorch's current stream when LibTorch has CUDA (so a
// collective follows the backward pass that produced its gradients without a device-wide sync), else
// the legacy default stream.
cudaStream_t nccl_caller_stream(int device) {
#ifdef GRADSWEEP_USE_TORCH_STREAM
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
#else
  (void)device;
  return cudaStreamLegacy;
#endif
}

NcclCommunicator::NcclCommunicator(Bare)
    : forensics_(
          comm_timeout_seconds(kDefaultCommTimeoutSeconds), kDumpGraceSeconds,
          [](const std::string& what, double waited, double limit) {
            mpi::end_hung_job(what, waited, limit, kTimeoutExitCode);
          },
          [this] { refresh_async(); }) {}

// Once the delegated constructor has run, a throw here runs the destructor, which frees what was made.
NcclCommunicator::NcclCommunicator(int device_index, const MpiBootstrap& mpi_bootstrap) : NcclCommunicator(Bare{}) {
  // Checked before MPI starts: a machine without a GPU fails the same way on every rank, at once.
  int gpus = 0;
  const cudaError_t counted_gpus = cudaGetDeviceCount(&gpus);
  if (counted_gpus != cudaSuccess || gpus == 0)
    throw std::runtime_error("the NCCL backend needs a CUDA device; this machine has none (cudaGetDeviceCount: " +
                             (counted_gpus != cudaSuccess ? cuda_text(counted_gpus) : std::string("0 devices")) + ")" +
                             launcher_rank_suffix());
  std::unique_ptr<HostCommunicator> bootstrap;  // MPI under a launcher: ranks and the id's broadcast
  if (mpi::launched_by_mpi()) {
    bootstrap = mpi_bootstrap();  // watched: a rank that never joins the broadcast is a hang
    rank_ = job_rank_ = bootstrap->rank();
    size_ = bootstrap->size();
    local_rank_ = bootstrap->local_rank();
    local_size_ = bootstrap->local_size();
  }
  forensics_.set_rank(rank_, size_);
  device_ = device_index >= 0 ? device_index : local_rank_ % gpus;
  if (device_ >= gpus)
    throw std::runtime_error("NCCL backend" + where() + ": runtime.device asks for cuda:" + std::to_string(device_) +
                             " but this node shows " + std::to_string(gpus) + " GPU(s)");
  check_cuda(cudaSetDevice(device_), "communicator", "cudaSetDevice");

  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "communicator", "ncclGetUniqueId");
  if (bootstrap) {
    torch::Tensor bytes = torch::empty({static_cast<std::int64_t>(sizeof id)}, torch::kByte);
    std::memcpy(bytes.data_ptr(), &id, sizeof id);
    sdk::check(bootstrap->broadcast(bytes, 0));
    std::memcpy(&id, bytes.data_ptr(), sizeof id);
    // Released once it has carried the id: its own flight recorder would answer the dump requests of this
    // backend's too, into the same rank-<r>.json. MPI itself stays up (MPI_Abort ends a failing job).
    bootstrap.reset();
  }
  watched(forensics_.timeout(), "ncclCommInitRank" + where(),
          [&] { check_nccl(ncclCommInitRank(&comm_, size_, id, rank_), "communicator", "ncclCommInitRank"); });
  create_resources();
  // The fingerprint exchange would be one more NCCL collective on this communicator, ordered behind the
  // async calls queued before it: every checked async call would wait for them. Not worth it for a
  // debugging aid; a mismatch still hangs into the watchdog, whose verdict names the ranks that disagree.
  if (forensics::check_collectives() && rank_ == 0)
    spdlog::warn(
        "runtime.check_collectives: not checked on the NCCL backend; a mismatched collective is named by "
        "the flight recorder's verdict when the watchdog (runtime.comm_timeout) ends the job");

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

void NcclCommunicator::create_resources() {
  check_cuda(cudaStreamCreateWithFlags(&async_stream_, cudaStreamNonBlocking), "communicator", "cudaStreamCreate");
  check_cuda(cudaEventCreateWithFlags(&drained_, cudaEventDisableTiming), "communicator", "cudaEventCreate");
  check_cuda(cudaEventCreateWithFlags(&finished_, cudaEventDisableTiming), "communicator", "cudaEventCreate");
  check_cuda(cudaMalloc(&barrier_word_, sizeof(float)), "communicator", "cudaMalloc");
}

NcclCommunicator::~NcclCommunicator() {
  drain_async();
  bool broken = false;
  {
    const std::lock_guard<std::mutex> lock(broken_mutex_);
    broken = !broken_.empty();
  }
  // ncclCommDestroy waits for the communicator's work, which a failed one may never finish.
  if (comm_ != nullptr) broken ? ncclCommAbort(comm_) : ncclCommDestroy(comm_);
  if (barrier_word_ != nullptr) cudaFree(barrier_word_);
  if (drained_ != nullptr) cudaEventDestroy(drained_);
  if (finished_ != nullptr) cudaEventDestroy(finished_);
  if (async_stream_ != nullptr) cudaStreamDestroy(async_stream_);
}

sdk::Status NcclCommunicator::with_algorithm(sdk::Algorithm algorithm, sdk::Communicator** view) noexcept {
  if (sdk::Status gone = parent_status("with_algorithm"); !gone.ok) return gone;
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

void NcclCommunicator::check_cuda(cudaError_t e, const std::string& what, const char* function) const {
  if (e != cudaSuccess) throw std::runtime_error(what + where() + ": " + function + " failed: " + cuda_text(e));
}

std::string NcclCommunicator::nccl_text(ncclResult_t r, const std::string& what, const char* function) const {
  std::string message = what + where() + ": " + function + " failed: " + ncclGetErrorString(r);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 13, 0)
  if (comm_ != nullptr)
    if (const char* last = ncclGetLastError(comm_); last != nullptr && *last != '\0')
      message += " (" + std::string(last) + ")";
#endif
  return message + "; NCCL_DEBUG=WARN says more";
}

void NcclCommunicator::check_nccl(ncclResult_t r, const std::string& what, const char* function) const {
  if (r != ncclSuccess) throw std::runtime_error(nccl_text(r, what, function));
}

void NcclCommunicator::check_peer(int peer, const std::string& call, const char* role) const {
  if (peer < 0 || peer >= size_)
    throw std::invalid_argument(call + ": " + role + " rank " + std::to_string(peer) + " out of range (" +
                                std::to_string(size_) + " ranks)");
}

void NcclCommunicator::check_usable() const {
  const std::lock_guard<std::mutex> lock(broken_mutex_);
  if (!broken_.empty())
    throw std::runtime_error(
        "the NCCL communicator" + where() +
        " cannot be used after a collective failed (NCCL's rule after an asynchronous error): " + broken_);
}

std::optional<std::string> NcclCommunicator::poll(cudaEvent_t event, const std::string& what, bool* done) {
  const cudaError_t state = cudaEventQuery(event);
  *done = state == cudaSuccess;
  if (*done) return std::nullopt;
  if (state != cudaErrorNotReady) return what + where() + ": cudaEventQuery failed: " + cuda_text(state);
  ncclResult_t async_error = ncclSuccess;
  if (const ncclResult_t asked = ncclCommGetAsyncError(comm_, &async_error); asked != ncclSuccess)
    return nccl_text(asked, what, "ncclCommGetAsyncError");
  if (async_error != ncclSuccess && async_error != ncclInProgress)
    return nccl_text(async_error, what, "NCCL (asynchronous)");
  return std::nullopt;
}

// The exchange of dumps runs outside the watch: its grace period is not time spent in the collective.
void NcclCommunicator::wait_for(cudaEvent_t event, const std::string& what) {
  const std::optional<std::string> failure = watched(forensics_.timeout(), what + where(), [&] {
    for (;;) {
      bool done = false;
      std::optional<std::string> failed = poll(event, what, &done);
      if (failed || done) return failed;
      std::this_thread::yield();
    }
  });
  if (!failure) return;
  bool first = false;
  {
    const std::lock_guard<std::mutex> lock(broken_mutex_);
    first = broken_.empty();
    if (first) broken_ = *failure;
  }
  // Once per communicator: the requests a failing strategy drops after the first error all fail the same
  // way, and each exchange may wait its whole grace period for a peer that is gone.
  if (first) forensics_.on_failure(*failure);
  throw std::runtime_error(*failure);
}

template <class Enqueue>
double NcclCommunicator::run_blocking(const CallShape& call, const char* function, Enqueue&& enqueue) {
  const std::lock_guard<std::mutex> lock(issue_mutex_);
  check_usable();
  check_cuda(cudaSetDevice(device_), describe(call), "cudaSetDevice");  // the calling thread may be a strategy's own
  const cudaStream_t stream = nccl_caller_stream(device_);
  std::string what;
  // Issued while the caller's queued compute drains (a rank stuck there is not inside this collective
  // yet), running once enqueued.
  const auto recorded = forensics_.record(call, [&](std::uint64_t seq) {
    what = numbered(call, seq);
    check_cuda(cudaEventRecord(drained_, stream), what, "cudaEventRecord");
    wait_for(drained_, what);  // not communication time
  });
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
    const double s = run_blocking(
        call_shape(CommOp::Allreduce, tensor, static_cast<int>(op)), "ncclAllReduce",
        [&](cudaStream_t stream) { return ncclAllReduce(b.data(), b.data(), b.count, b.type, nop, comm_, stream); });
    b.finish();
    return Outcome{allreduce_traffic(b.bytes, size_), s};
  });
}

// Counted as a pipelined chain from the root (comm/core/byte_counting.hpp), as the counting layer counts the others.
sdk::Status NcclCommunicator::broadcast(torch::Tensor& tensor, int root) noexcept {
  return counted([&] {
    DeviceBuffer b = device_buffer(tensor, device_, "broadcast", "the");
    check_peer(root, "broadcast", "root");
    const double s = run_blocking(
        call_shape(CommOp::Broadcast, tensor, -1, root), "ncclBroadcast",
        [&](cudaStream_t stream) { return ncclBroadcast(b.data(), b.data(), b.count, b.type, root, comm_, stream); });
    b.finish();
    return Outcome{broadcast_traffic(b.bytes, size_, rank_, root), s};
  });
}

sdk::Status NcclCommunicator::allgather(const torch::Tensor& input, torch::Tensor& output) noexcept {
  return counted([&] {
    DeviceBuffer in = device_buffer(input, device_, "allgather", "input");
    DeviceBuffer out = device_buffer(output, device_, "allgather", "output");
    nccl::prepare_allgather(in, out, rank_, size_, "allgather");
    const double s = run_blocking(call_shape(CommOp::Allgather, input), "ncclAllGather", [&](cudaStream_t stream) {
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
    nccl::prepare_reduce_scatter(in, out, rank_, size_, "reduce_scatter");
    const ncclRedOp_t nop = nccl_op(op);
    const double s = run_blocking(
        call_shape(CommOp::ReduceScatter, input, static_cast<int>(op)), "ncclReduceScatter", [&](cudaStream_t stream) {
          return ncclReduceScatter(in.data(), out.data(), out.count, out.type, nop, comm_, stream);
        });
    out.finish();  // also copies a scratch result into the caller's output
    return Outcome{scatter_gather_traffic(in.bytes, size_), s};
  });
}

namespace {

CallShape point_to_point(CommOp op, const torch::Tensor& tensor, int peer, int tag) {
  CallShape call = call_shape(op, tensor, -1, peer);
  call.tag = tag;
  return call;
}

}  // namespace

// NCCL has no tags: messages between two ranks match in the order they were issued. The tag is
// checked (non-negative) so that code moving between backends keeps valid tags, and is otherwise unused.
sdk::Status NcclCommunicator::send(const torch::Tensor& tensor, int dst, int tag) noexcept {
  return counted([&] {
    DeviceBuffer b = device_buffer(tensor, device_, "send", "the");
    check_peer(dst, "send", "destination");
    if (dst == rank_) throw std::invalid_argument("send: rank " + std::to_string(dst) + " is this rank itself");
    if (tag < 0) throw std::invalid_argument("send: tag " + std::to_string(tag) + " is negative");
    const double s = run_blocking(point_to_point(CommOp::Send, tensor, dst, tag), "ncclSend", [&](cudaStream_t stream) {
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
    const double s = run_blocking(point_to_point(CommOp::Recv, tensor, src, tag), "ncclRecv", [&](cudaStream_t stream) {
      return ncclRecv(b.data(), b.count, b.type, src, comm_, stream);
    });
    b.finish();
    return Outcome{Traffic{0, b.bytes, b.bytes}, s};
  });
}

// A 1-element allreduce: every rank must enter it before any leaves. Counted as no bytes, like MPI_Barrier,
// and recorded as a barrier, which is what the other ranks' dumps will call it.
sdk::Status NcclCommunicator::barrier() noexcept {
  return counted([&] {
    CallShape call;
    call.op = CommOp::Barrier;
    const double s = run_blocking(call, "ncclAllReduce", [&](cudaStream_t stream) {
      return ncclAllReduce(barrier_word_, barrier_word_, 1, ncclFloat32, ncclSum, comm_, stream);
    });
    return Outcome{Traffic{}, s};
  });
}

std::unique_ptr<HostCommunicator> make_nccl_communicator(int device_index, const MpiBootstrap& mpi_bootstrap) {
  return std::make_unique<NcclCommunicator>(device_index, mpi_bootstrap);
}

std::string describe_nccl_communicator(const HostCommunicator& comm) {
  const auto* nccl = dynamic_cast<const NcclCommunicator*>(&comm.transport());  // under the stack's layers
  return nccl != nullptr ? nccl->summary() : "";
}

}  // namespace gradsweep::comm
