// The MPI backend: every rank of the job, CPU tensors, one MPI call per collective.
//
// Errors come back as codes (MPI_ERRORS_RETURN) and leave as Status messages that name the call, the
// MPI function and MPI_Error_string's text. Bytes are counted by the ring convention that nccl-tests'
// bus bandwidth assumes (docs/communicators.md), whatever algorithm Open MPI picks underneath, so that
// a strategy's traffic reads the same on every backend. Blocking calls run under a watchdog
// (comm/collective_timeout.hpp) that ends the job rather than let it hang.
#include "comm/collective_timeout.hpp"
#include "comm/host_communicator.hpp"
#include "comm/mpi_runtime.hpp"

#include <gradsweep/sdk/status.hpp>

#include <mpi.h>
#include <spdlog/spdlog.h>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

namespace gradsweep::host {
namespace {

using Clock = std::chrono::steady_clock;

// A rank that waits this long inside one call is taken to be hung (GRADSWEEP_COMM_TIMEOUT overrides).
constexpr double kDefaultTimeoutSeconds = 600.0;
// Exit code of a job the watchdog ends (a failing rank's own error ends it with 2, see train_command).
constexpr int kTimeoutExitCode = 3;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// ---- 16-bit floats ---------------------------------------------------------------------------------
// MPI has no bfloat16 or half type: both travel as raw 16-bit words (MPI_UINT16_T). Reductions of them
// use user-defined MPI_Ops that widen each pair to float32, combine, and round back to 16 bits. We do
// not convert whole tensors to float32 instead: the wire would then carry 4 bytes an element, and a
// strategy that sends 16-bit gradients to halve its traffic would measure nothing. Rounding every
// partial result to 16 bits is what NCCL's bf16/fp16 reductions do too.

struct Sum {
  float operator()(float a, float b) const { return a + b; }
};
struct Max {
  float operator()(float a, float b) const { return std::max(a, b); }
};
struct Min {
  float operator()(float a, float b) const { return std::min(a, b); }
};

template <class T, class Combine>
void reduce_16bit(void* in, void* inout, int* length, MPI_Datatype*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < *length; ++i) b[i] = T(Combine{}(static_cast<float>(a[i]), static_cast<float>(b[i])));
}

struct Ops16 {
  MPI_Op bf16[3];  // indexed by sdk::ReduceOp
  MPI_Op half[3];
};

// Created once MPI runs; never freed (MPI_Finalize releases them).
const Ops16& ops16() {
  static Ops16 ops;
  static std::once_flag once;
  std::call_once(once, [] {
    MPI_Op_create(&reduce_16bit<c10::BFloat16, Sum>, 1, &ops.bf16[0]);
    MPI_Op_create(&reduce_16bit<c10::BFloat16, Max>, 1, &ops.bf16[1]);
    MPI_Op_create(&reduce_16bit<c10::BFloat16, Min>, 1, &ops.bf16[2]);
    MPI_Op_create(&reduce_16bit<c10::Half, Sum>, 1, &ops.half[0]);
    MPI_Op_create(&reduce_16bit<c10::Half, Max>, 1, &ops.half[1]);
    MPI_Op_create(&reduce_16bit<c10::Half, Min>, 1, &ops.half[2]);
  });
  return ops;
}

// ---- tensors as MPI buffers ------------------------------------------------------------------------

const char* dtype_name(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat: return "float32";
    case torch::kDouble: return "float64";
    case torch::kBFloat16: return "bfloat16";
    case torch::kHalf: return "float16";
    case torch::kInt: return "int32";
    case torch::kLong: return "int64";
    case torch::kByte: return "uint8";
    default: return c10::toString(t);
  }
}

std::optional<MPI_Datatype> mpi_type(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat: return MPI_FLOAT;
    case torch::kDouble: return MPI_DOUBLE;
    case torch::kBFloat16:
    case torch::kHalf: return MPI_UINT16_T;
    case torch::kInt: return MPI_INT32_T;
    case torch::kLong: return MPI_INT64_T;
    case torch::kByte: return MPI_UINT8_T;
    default: return std::nullopt;
  }
}

MPI_Op mpi_op(torch::ScalarType t, sdk::ReduceOp op) {
  const auto i = static_cast<std::size_t>(op);
  if (i > 2) throw std::invalid_argument("unknown ReduceOp " + std::to_string(i));
  if (t == torch::kBFloat16) return ops16().bf16[i];
  if (t == torch::kHalf) return ops16().half[i];
  static const MPI_Op native[3] = {MPI_SUM, MPI_MAX, MPI_MIN};
  return native[i];
}

// A contiguous CPU tensor of a supported type, seen as (pointer, count, MPI type).
struct Buffer {
  void* data;
  int count;
  MPI_Datatype type;
  std::uint64_t bytes;
};

Buffer buffer_of(const torch::Tensor& t, const std::string& call, const char* role) {
  const std::string who = call + ": " + role + " tensor";
  if (!t.defined()) throw std::invalid_argument(who + " is undefined");
  if (!t.device().is_cpu())
    throw std::invalid_argument(who + " is on " + t.device().str() +
                                "; the MPI backend moves CPU tensors (CUDA tensors need the NCCL backend)");
  if (!t.is_contiguous())
    throw std::invalid_argument(who + " is not contiguous (sizes " + c10::str(t.sizes()) + ", strides " +
                                c10::str(t.strides()) + "); pass .contiguous() or a flat buffer");
  const std::optional<MPI_Datatype> type = mpi_type(t.scalar_type());
  if (!type)
    throw std::invalid_argument(who + " has dtype " + std::string(dtype_name(t.scalar_type())) +
                                "; the MPI backend supports float32, float64, bfloat16, float16, int32, int64, uint8");
  if (t.numel() > INT_MAX)
    throw std::invalid_argument(who + " has " + std::to_string(t.numel()) +
                                " elements; one MPI call moves at most 2^31-1: split it");
  return {t.numel() == 0 ? nullptr : t.data_ptr(), static_cast<int>(t.numel()), *type,
          static_cast<std::uint64_t>(t.numel()) * t.element_size()};
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

void check_mpi(int rc, const std::string& call, const char* function) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(call + ": " + function + " failed: " + mpi::error_message(rc));
}

// ---- byte counting (docs/communicators.md) ---------------------------------------------------------
// Per rank, each way, for a collective over `bytes` (nccl-tests' S) on n ranks run as a ring:
// allreduce 2(n-1)/n * S, allgather and reduce_scatter (n-1)/n * S with S the full (gathered) size.
std::uint64_t ring_share(std::uint64_t bytes, int n, int passes) {
  return n <= 1 ? 0 : static_cast<std::uint64_t>(passes) * static_cast<std::uint64_t>(n - 1) * bytes /
                          static_cast<std::uint64_t>(n);
}

struct Traffic {
  std::uint64_t sent = 0, received = 0;
};

// ---- the communicator ------------------------------------------------------------------------------

class MpiRequest;

class MpiCommunicator final : public HostCommunicator {
 public:
  MpiCommunicator();
  ~MpiCommunicator() override;

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  int local_rank() const noexcept override { return local_rank_; }
  int local_size() const noexcept override { return local_size_; }
  const char* backend() const noexcept override { return "mpi"; }

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
    if (algorithm == sdk::Algorithm::Native) {
      *view = this;
      return sdk::Status::Ok();
    }
    return sdk::Status::Error("with_algorithm: the ring algorithm is not built yet");
  }
  sdk::Status recv_any(torch::Tensor&, int, int*) noexcept override {
    return sdk::Status::Error("recv_any: not built yet");
  }

 private:
  friend class MpiRequest;

  // Runs one call: `body` checks its arguments and calls MPI, throwing on failure, and returns the
  // bytes to count; its time is counted whether it succeeds or not, its bytes only when it does.
  template <class Body>
  sdk::Status counted(Body&& body) noexcept {
    const auto t0 = Clock::now();
    std::optional<Traffic> traffic;
    sdk::Status status = sdk::guard([&] { traffic = body(); });
    add(traffic.value_or(Traffic{}), seconds_since(t0), 1);
    return status;
  }
  void add(Traffic traffic, double seconds, std::uint64_t calls);
  std::string where() const { return " on rank " + std::to_string(rank_) + " of " + std::to_string(size_); }
  void check_peer(int peer, const std::string& call, const char* role) const;
  // send/recv: a peer other than this rank and a tag within the library's bound.
  void check_point_to_point(int peer, int tag, const std::string& call, const char* role) const;
  void on_timeout(const std::string& what, double waited) const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  int tag_ub_ = 32767;  // the least MPI guarantees; the constructor asks for the real bound
  std::mutex stats_mutex_;
  CollectiveTimeout timeout_;
  std::mutex requests_mutex_;
  std::set<MpiRequest*> requests_;  // un-waited async calls, completed before the communicator goes
};

// An MPI_Iallreduce in flight. Holds the tensor so its storage outlives the operation.
class MpiRequest final : public sdk::Request {
 public:
  MpiRequest(MpiCommunicator& owner, MPI_Request request, torch::Tensor tensor, std::string what)
      : owner_(&owner), request_(request), tensor_(std::move(tensor)), what_(std::move(what)) {
    const std::lock_guard<std::mutex> lock(owner.requests_mutex_);
    owner.requests_.insert(this);
  }
  ~MpiRequest() override {
    wait();  // destroying an un-waited request completes it
    if (owner_ != nullptr) {
      const std::lock_guard<std::mutex> lock(owner_->requests_mutex_);
      owner_->requests_.erase(this);
    }
  }

  sdk::Status wait() noexcept override {
    if (done_) return result_;
    const auto t0 = Clock::now();
    int rc = MPI_SUCCESS;
    {
      const CollectiveTimeout::Scope watch(owner_->timeout_, what_ + owner_->where());
      rc = MPI_Wait(&request_, MPI_STATUS_IGNORE);
    }
    done_ = true;
    tensor_ = torch::Tensor();
    if (rc != MPI_SUCCESS) result_ = sdk::Status::Error(what_ + ": MPI_Wait failed: " + mpi::error_message(rc));
    owner_->add({}, seconds_since(t0), 0);
    return result_;
  }

  // The communicator is going away: finish now and stop referring to it.
  void complete_and_detach() {
    wait();
    owner_ = nullptr;
  }

 private:
  MpiCommunicator* owner_;
  MPI_Request request_;
  torch::Tensor tensor_;
  std::string what_;
  bool done_ = false;
  sdk::Status result_;
};

MpiCommunicator::MpiCommunicator()
    : timeout_(std::chrono::duration<double>(comm_timeout_seconds(kDefaultTimeoutSeconds)),
               [this](const std::string& what, double waited) { on_timeout(what, waited); }) {
  mpi::ensure_initialized();
  // Our own communicator, so that our traffic never matches messages of anyone else using MPI_COMM_WORLD.
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "communicator", "MPI_Comm_dup");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  // Ranks sharing memory are the ranks on this node: they share its cores (see choose_threads).
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node), "communicator",
            "MPI_Comm_split_type");
  MPI_Comm_rank(node, &local_rank_);
  MPI_Comm_size(node, &local_size_);
  MPI_Comm_free(&node);
  int* tag_ub = nullptr;
  int found = 0;
  if (MPI_Comm_get_attr(comm_, MPI_TAG_UB, &tag_ub, &found) == MPI_SUCCESS && found && tag_ub != nullptr)
    tag_ub_ = *tag_ub;
  ops16();
}

MpiCommunicator::~MpiCommunicator() {
  std::set<MpiRequest*> pending;
  {
    const std::lock_guard<std::mutex> lock(requests_mutex_);
    pending.swap(requests_);
  }
  for (MpiRequest* r : pending) r->complete_and_detach();
  if (comm_ != MPI_COMM_NULL && mpi::active()) MPI_Comm_free(&comm_);
}

void MpiCommunicator::add(Traffic traffic, double seconds, std::uint64_t calls) {
  const std::lock_guard<std::mutex> lock(stats_mutex_);
  stats_.bytes_sent += traffic.sent;
  stats_.bytes_received += traffic.received;
  stats_.seconds += seconds;
  stats_.calls += calls;
}

void MpiCommunicator::check_point_to_point(int peer, int tag, const std::string& call, const char* role) const {
  check_peer(peer, call, role);
  if (peer == rank_) throw std::invalid_argument(call + ": rank " + std::to_string(peer) + " is this rank itself");
  if (tag < 0 || tag > tag_ub_)
    throw std::invalid_argument(call + ": tag " + std::to_string(tag) + " out of range [0, " + std::to_string(tag_ub_) +
                                "]");
}

void MpiCommunicator::check_peer(int peer, const std::string& call, const char* role) const {
  if (peer < 0 || peer >= size_)
    throw std::invalid_argument(call + ": " + role + " rank " + std::to_string(peer) + " out of range (" +
                                std::to_string(size_) + " ranks)");
}

void MpiCommunicator::on_timeout(const std::string& what, double waited) const {
  spdlog::error(
      "{} has waited {:.0f} s (limit {:.0f} s, GRADSWEEP_COMM_TIMEOUT) for other ranks that never joined it: "
      "ranks calling collectives in a different order or with different sizes, or a rank stuck or dead. "
      "Ending the job (exit code {})",
      what, waited, timeout_.limit_seconds(), kTimeoutExitCode);
  spdlog::default_logger()->flush();
  mpi::abort_job(kTimeoutExitCode);
}

sdk::Status MpiCommunicator::allreduce(torch::Tensor& tensor, sdk::ReduceOp op) noexcept {
  return counted([&] {
    const Buffer b = buffer_of(tensor, "allreduce", "the");
    const MPI_Op mop = mpi_op(tensor.scalar_type(), op);
    int rc;
    {
      const CollectiveTimeout::Scope watch(timeout_, describe("allreduce", tensor) + where());
      rc = MPI_Allreduce(MPI_IN_PLACE, b.data, b.count, b.type, mop, comm_);
    }
    check_mpi(rc, "allreduce", "MPI_Allreduce");
    const std::uint64_t each_way = ring_share(b.bytes, size_, 2);
    return Traffic{each_way, each_way};
  });
}

// Counted as a pipelined chain from the root (what nccl-tests' busbw factor 1 assumes): every rank but
// the root receives S, every rank but the last in the chain (the root's left neighbour) sends S.
sdk::Status MpiCommunicator::broadcast(torch::Tensor& tensor, int root) noexcept {
  return counted([&] {
    const Buffer b = buffer_of(tensor, "broadcast", "the");
    check_peer(root, "broadcast", "root");
    int rc;
    {
      const CollectiveTimeout::Scope watch(timeout_, describe("broadcast", tensor) + " from rank " +
                                                         std::to_string(root) + where());
      rc = MPI_Bcast(b.data, b.count, b.type, root, comm_);
    }
    check_mpi(rc, "broadcast", "MPI_Bcast");
    const int last = (root + size_ - 1) % size_;
    return Traffic{rank_ == last ? 0 : b.bytes, rank_ == root ? 0 : b.bytes};
  });
}

sdk::Status MpiCommunicator::allgather(const torch::Tensor& input, torch::Tensor& output) noexcept {
  return counted([&] {
    const Buffer in = buffer_of(input, "allgather", "input");
    const Buffer out = buffer_of(output, "allgather", "output");
    if (input.scalar_type() != output.scalar_type())
      throw std::invalid_argument(std::string("allgather: input is ") + dtype_name(input.scalar_type()) +
                                  " but output is " + dtype_name(output.scalar_type()));
    if (output.numel() != input.numel() * size_)
      throw std::invalid_argument("allgather: output has " + std::to_string(output.numel()) +
                                  " elements; expected size() x input = " + std::to_string(size_) + " x " +
                                  std::to_string(input.numel()));
    // An input that is this rank's own slot of the output (the usual ZeRO layout) is MPI_IN_PLACE;
    // any other overlap would be undefined in MPI, so that input is copied first.
    const void* send = in.data;
    torch::Tensor copy;
    if (in.count > 0 && in.data == static_cast<char*>(out.data) + static_cast<std::uint64_t>(rank_) * in.bytes) {
      send = MPI_IN_PLACE;
    } else if (overlap(input, output)) {
      copy = input.clone();
      send = copy.data_ptr();
    }
    int rc;
    {
      const CollectiveTimeout::Scope watch(timeout_, describe("allgather", input) + " per rank" + where());
      rc = MPI_Allgather(send, in.count, in.type, out.data, in.count, out.type, comm_);
    }
    check_mpi(rc, "allgather", "MPI_Allgather");
    const std::uint64_t each_way = ring_share(out.bytes, size_, 1);
    return Traffic{each_way, each_way};
  });
}

sdk::Status MpiCommunicator::reduce_scatter(const torch::Tensor& input, torch::Tensor& output,
                                            sdk::ReduceOp op) noexcept {
  return counted([&] {
    const Buffer in = buffer_of(input, "reduce_scatter", "input");
    Buffer out = buffer_of(output, "reduce_scatter", "output");
    if (input.scalar_type() != output.scalar_type())
      throw std::invalid_argument(std::string("reduce_scatter: input is ") + dtype_name(input.scalar_type()) +
                                  " but output is " + dtype_name(output.scalar_type()));
    if (input.numel() != output.numel() * size_)
      throw std::invalid_argument("reduce_scatter: input has " + std::to_string(input.numel()) +
                                  " elements; expected size() x output = " + std::to_string(size_) + " x " +
                                  std::to_string(output.numel()));
    const MPI_Op mop = mpi_op(input.scalar_type(), op);
    // MPI forbids overlapping buffers here: reduce into a scratch output and copy.
    torch::Tensor scratch;
    if (overlap(input, output)) {
      scratch = torch::empty_like(output);
      out.data = scratch.data_ptr();
    }
    int rc;
    {
      const CollectiveTimeout::Scope watch(timeout_, describe("reduce_scatter", input) + where());
      rc = MPI_Reduce_scatter_block(in.data, out.data, out.count, out.type, mop, comm_);
    }
    check_mpi(rc, "reduce_scatter", "MPI_Reduce_scatter_block");
    if (scratch.defined()) output.copy_(scratch);
    const std::uint64_t each_way = ring_share(in.bytes, size_, 1);
    return Traffic{each_way, each_way};
  });
}

sdk::Status MpiCommunicator::send(const torch::Tensor& tensor, int dst, int tag) noexcept {
  return counted([&] {
    const Buffer b = buffer_of(tensor, "send", "the");
    check_point_to_point(dst, tag, "send", "destination");
    int rc;
    {
      const CollectiveTimeout::Scope watch(timeout_, describe("send", tensor) + " to rank " + std::to_string(dst) +
                                                         " tag " + std::to_string(tag) + where());
      rc = MPI_Send(b.data, b.count, b.type, dst, tag, comm_);
    }
    check_mpi(rc, "send", "MPI_Send");
    return Traffic{b.bytes, 0};
  });
}

sdk::Status MpiCommunicator::recv(torch::Tensor& tensor, int src, int tag) noexcept {
  return counted([&] {
    const Buffer b = buffer_of(tensor, "recv", "the");
    check_point_to_point(src, tag, "recv", "source");
    MPI_Status status;
    int rc;
    {
      const CollectiveTimeout::Scope watch(timeout_, describe("recv", tensor) + " from rank " + std::to_string(src) +
                                                         " tag " + std::to_string(tag) + where());
      rc = MPI_Recv(b.data, b.count, b.type, src, tag, comm_, &status);
    }
    int error_class = rc;
    if (rc != MPI_SUCCESS && MPI_Error_class(rc, &error_class) == MPI_SUCCESS && error_class == MPI_ERR_TRUNCATE)
      throw std::runtime_error("recv: rank " + std::to_string(src) + " sent more than the " +
                               std::to_string(b.count) + " elements expected (tag " + std::to_string(tag) + ")");
    check_mpi(rc, "recv", "MPI_Recv");
    int got = 0;
    MPI_Get_count(&status, b.type, &got);
    if (got != b.count)
      throw std::runtime_error("recv: rank " + std::to_string(src) + " sent " + std::to_string(got) + " elements, " +
                               std::to_string(b.count) + " expected (tag " + std::to_string(tag) + ")");
    return Traffic{0, b.bytes};
  });
}

sdk::Status MpiCommunicator::barrier() noexcept {
  return counted([&] {
    int rc;
    {
      const CollectiveTimeout::Scope watch(timeout_, "barrier" + where());
      rc = MPI_Barrier(comm_);
    }
    check_mpi(rc, "barrier", "MPI_Barrier");
    return Traffic{};
  });
}

// Bytes are counted when the operation starts; time is counted inside this call and inside wait().
sdk::Status MpiCommunicator::allreduce_async(torch::Tensor& tensor, sdk::ReduceOp op,
                                             std::unique_ptr<sdk::Request>* request) noexcept {
  return counted([&] {
    if (request == nullptr) throw std::invalid_argument("allreduce_async: request is null");
    const Buffer b = buffer_of(tensor, "allreduce_async", "the");
    MPI_Request handle = MPI_REQUEST_NULL;
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, b.data, b.count, b.type, mpi_op(tensor.scalar_type(), op), comm_, &handle),
              "allreduce_async", "MPI_Iallreduce");
    *request = std::make_unique<MpiRequest>(*this, handle, tensor, describe("allreduce_async", tensor));
    const std::uint64_t each_way = ring_share(b.bytes, size_, 2);
    return Traffic{each_way, each_way};
  });
}

}  // namespace

std::unique_ptr<HostCommunicator> make_mpi_communicator() { return std::make_unique<MpiCommunicator>(); }

}  // namespace gradsweep::host
