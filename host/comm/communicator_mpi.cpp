// The MPI backend: every rank of the job, CPU tensors. This file: set-up, the native collectives (one
// MPI call each), point-to-point and counting. The ring algorithms are in communicator_mpi_ring.cpp,
// asynchronous collectives in communicator_mpi_async.cpp.
//
// Errors come back as codes (MPI_ERRORS_RETURN) and leave as Status messages that name the call, the
// MPI function and MPI_Error_string's text. Bytes are counted by the ring convention that nccl-tests'
// bus bandwidth assumes (comm/byte_counting.hpp), whatever algorithm Open MPI picks underneath, so that
// a strategy's traffic reads the same on every backend. Blocking calls run under a watchdog
// (comm/collective_timeout.hpp) that ends the job rather than let it hang.
#include "comm/mpi_communicator.hpp"

#include "comm/collective_fingerprint.hpp"
#include "comm/fault_injection.hpp"
#include "comm/mpi_buffer.hpp"
#include "comm/mpi_reduce_ops.hpp"
#include "comm/mpi_runtime.hpp"
#include "comm/tensor_memory.hpp"
#include "comm/watched_call.hpp"
#include "env/environment.hpp"

#include <spdlog/spdlog.h>

#include <climits>
#include <cstdlib>
#include <stdexcept>

namespace gradsweep::comm {
namespace {

using mpi::Buffer;
using mpi::buffer_of;
using mpi::check_mpi;
using mpi::describe;

// A rank that waits this long inside one call is taken to be hung (GRADSWEEP_COMM_TIMEOUT overrides).
constexpr double kDefaultTimeoutSeconds = 600.0;
// Exit code of a job the watchdog ends (a failing rank's own error ends it with 2, see train_command).
constexpr int kTimeoutExitCode = 3;
// How long a rank whose watchdog fired waits for the other ranks' flight-recorder dumps.
constexpr double kDumpGraceSeconds = 5.0;

MPI_Comm duplicate(MPI_Comm base) {
  MPI_Comm comm = MPI_COMM_NULL;
  check_mpi(MPI_Comm_dup(base, &comm), "communicator", "MPI_Comm_dup");
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  return comm;
}

// A positive integer from the environment, or `fallback` when unset: the ring's tuning knobs, for
// benchmarks (docs/communicators.md). Every rank must see the same value (mpirun -x).
long env_positive(const char* name, long fallback) { return env::positive_integer(name, LONG_MAX).value_or(fallback); }

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm base, HostCommunicator* parent, const std::string& name)
    : check_(forensics::check_collectives()),
      forensics_("mpi"),
      timeout_(
          std::chrono::duration<double>(comm_timeout_seconds(kDefaultTimeoutSeconds)),
          [this](const std::string& what, double waited) { on_timeout(what, waited); },
          [this] { forensics_.poll_requests(); }) {
  mpi::ensure_initialized();
  if (parent != nullptr) link_to_parent(*parent, name);
  ring_tuning_.segment_bytes = static_cast<std::size_t>(
      env_positive("GRADSWEEP_RING_SEGMENT_BYTES", static_cast<long>(ring_tuning_.segment_bytes)));
  ring_tuning_.lookahead = static_cast<int>(env_positive("GRADSWEEP_RING_LOOKAHEAD", ring_tuning_.lookahead));
  if (ring_tuning_.lookahead >= ring::Transport::kMaxInFlight)
    throw std::invalid_argument("GRADSWEEP_RING_LOOKAHEAD: at most " +
                                std::to_string(ring::Transport::kMaxInFlight - 1));
  // Our own communicators, so that our traffic never matches messages of anyone else using `base`.
  comm_ = duplicate(base);
  ring_comm_ = duplicate(base);
  async_comm_ = duplicate(base);
  check_comm_ = duplicate(base);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  forensics_.set_rank(rank_, size_);
  if (parent != nullptr) forensics_.set_group(name, mpi::job_ranks(comm_));
  // Ranks sharing memory are the ranks on this node: they share its cores (see choose_threads). A group's
  // are its ranks on the node as groups see nodes (GRADSWEEP_RANKS_PER_NODE's fake ones too).
  MPI_Comm node = MPI_COMM_NULL;
  if (parent != nullptr)
    node = mpi::split_node(comm_, "communicator");
  else
    check_mpi(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node), "communicator",
              "MPI_Comm_split_type");
  MPI_Comm_rank(node, &local_rank_);
  MPI_Comm_size(node, &local_size_);
  MPI_Comm_free(&node);
  int* tag_ub = nullptr;
  int found = 0;
  if (MPI_Comm_get_attr(comm_, MPI_TAG_UB, &tag_ub, &found) == MPI_SUCCESS && found && tag_ub != nullptr)
    tag_ub_ = *tag_ub;
  mpi::create_reduce_ops();
  ring_view_ = std::make_unique<AlgorithmView>(*this, *this, sdk::Algorithm::Ring);
  split_ = std::make_unique<mpi::NodeSplit>(ring_comm_);
  async_split_ = std::make_unique<mpi::NodeSplit>(async_comm_);
  hierarchical_view_ = std::make_unique<AlgorithmView>(*this, *this, sdk::Algorithm::Hierarchical);
}

MpiCommunicator::~MpiCommunicator() {
  drain_async();
  split_.reset();
  async_split_.reset();
  for (MPI_Comm* c : {&comm_, &ring_comm_, &async_comm_, &check_comm_})
    if (*c != MPI_COMM_NULL && mpi::active()) MPI_Comm_free(c);
}

void MpiCommunicator::add(const Traffic& traffic, double busy_seconds, double blocked_seconds, std::uint64_t calls) {
  CommStats delta;
  delta.bytes_sent = traffic.sent;
  delta.bytes_received = traffic.received;
  delta.payload_bytes = traffic.payload;
  delta.seconds = busy_seconds;
  delta.blocked_seconds = blocked_seconds;
  delta.calls = calls;
  add_stats(delta);
}

void MpiCommunicator::check_tag(int tag, const std::string& call) const {
  if (tag < 0 || tag > tag_ub_)
    throw std::invalid_argument(call + ": tag " + std::to_string(tag) + " out of range [0, " + std::to_string(tag_ub_) +
                                "]");
}

void MpiCommunicator::check_point_to_point(int peer, int tag, const std::string& call, const char* role) const {
  check_peer(peer, call, role);
  if (peer == rank_) throw std::invalid_argument(call + ": rank " + std::to_string(peer) + " is this rank itself");
  check_tag(tag, call);
}

void MpiCommunicator::check_peer(int peer, const std::string& call, const char* role) const {
  if (peer < 0 || peer >= size_)
    throw std::invalid_argument(call + ": " + role + " rank " + std::to_string(peer) + " out of range (" +
                                std::to_string(size_) + " ranks)");
}

// Before ending the job, the ranks' flight recorders say who is behind (comm/collective_forensics.hpp).
// The grace period lets every rank's watchdog thread (which looks once a second) answer.
void MpiCommunicator::on_timeout(const std::string& what, double waited) {
  const HangVerdict verdict = forensics_.on_hang(what, kDumpGraceSeconds);
  if (!verdict.message.empty())
    spdlog::error("hang: {} (flight recorder dumps in {})", verdict.message, forensics::directory().string());
  mpi::end_hung_job(what, waited, timeout_.limit_seconds(), kTimeoutExitCode);
}

CallShape MpiCommunicator::shape(CommOp op, const torch::Tensor& tensor, int reduce, int peer, bool ring) {
  return call_shape(op, tensor, reduce, peer, ring);
}

FlightRecorder::Scope MpiCommunicator::record(const CallShape& call) {
  fault_injection::check_call(rank_, describe(call));
  if (!check_ || !is_collective(call.op)) return FlightRecorder::Scope(forensics_.recorder(), call);
  return FlightRecorder::Scope(forensics_.recorder(), call, [&](std::uint64_t seq) { check_same_call(call, seq); });
}

void MpiCommunicator::check_same_call(const CallShape& call, std::uint64_t seq) {
  if (!check_) return;
  const std::lock_guard<std::mutex> lock(check_mutex_);
  const Fingerprint mine = fingerprint_of(seq, call);
  std::vector<Fingerprint> all(static_cast<std::size_t>(size_));
  watched_mpi(timeout_, "the collective check before " + describe(call) + " #" + std::to_string(seq) + where(),
              "check_collectives", "MPI_Allgather", [&] {
                return MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, check_comm_);
              });
  if (const auto mismatch = first_mismatch(all)) {
    const std::string message = "collective mismatch (runtime.check_collectives): " + *mismatch;
    forensics_.dump(message);
    if (rank_ == 0)
      forensics::write_verdict("mismatch", std::string(to_string(call.op)) + " #" + std::to_string(seq), message);
    throw std::runtime_error(message);
  }
}

sdk::Status MpiCommunicator::allreduce(torch::Tensor& tensor, sdk::ReduceOp op) noexcept {
  return counted([&] {
    const Buffer b = buffer_of(tensor, "allreduce", "the");
    const MPI_Op mop = mpi::reduce_op(tensor.scalar_type(), op);
    const auto recorded = record(shape(CommOp::Allreduce, tensor, static_cast<int>(op)));
    watched_mpi(timeout_, describe("allreduce", tensor) + where(), "allreduce", "MPI_Allreduce",
                [&] { return MPI_Allreduce(MPI_IN_PLACE, b.data, b.count, b.type, mop, comm_); });
    return allreduce_traffic(b.bytes, size_);
  });
}

// Counted as a pipelined chain from the root (what nccl-tests' busbw factor 1 assumes): every rank but
// the root receives S, every rank but the last in the chain (the root's left neighbour) sends S.
sdk::Status MpiCommunicator::broadcast(torch::Tensor& tensor, int root) noexcept {
  return counted([&] {
    const Buffer b = buffer_of(tensor, "broadcast", "the");
    check_peer(root, "broadcast", "root");
    const auto recorded = record(shape(CommOp::Broadcast, tensor, -1, root));
    watched_mpi(timeout_, describe("broadcast", tensor) + " from rank " + std::to_string(root) + where(), "broadcast",
                "MPI_Bcast", [&] { return MPI_Bcast(b.data, b.count, b.type, root, comm_); });
    const int last = (root + size_ - 1) % size_;
    return Traffic{rank_ == last ? 0 : b.bytes, rank_ == root ? 0 : b.bytes, b.bytes};
  });
}

// An input that is this rank's own slot of the output (the usual ZeRO layout) is MPI_IN_PLACE; any
// other overlap would be undefined in MPI, so that input is copied first.
void MpiCommunicator::native_allgather(MPI_Comm comm, const torch::Tensor& input, torch::Tensor& output,
                                       const std::string& call) {
  const Buffer in = buffer_of(input, call, "input");
  const Buffer out = buffer_of(output, call, "output");
  const void* send = in.data;
  torch::Tensor copy;
  if (in.count > 0 && in.data == static_cast<char*>(out.data) + static_cast<std::uint64_t>(rank_) * in.bytes) {
    send = MPI_IN_PLACE;
  } else if (overlap(input, output)) {
    copy = input.clone();
    send = copy.data_ptr();
  }
  check_mpi(MPI_Allgather(send, in.count, in.type, out.data, in.count, out.type, comm), call, "MPI_Allgather");
}

// MPI forbids overlapping buffers here: reduce into a scratch output and copy.
void MpiCommunicator::native_reduce_scatter(MPI_Comm comm, const torch::Tensor& input, torch::Tensor& output,
                                            sdk::ReduceOp op, const std::string& call) {
  const Buffer in = buffer_of(input, call, "input");
  Buffer out = buffer_of(output, call, "output");
  const MPI_Op mop = mpi::reduce_op(input.scalar_type(), op);
  torch::Tensor scratch;
  if (overlap(input, output)) {
    scratch = torch::empty_like(output);
    out.data = scratch.data_ptr();
  }
  check_mpi(MPI_Reduce_scatter_block(in.data, out.data, out.count, out.type, mop, comm), call,
            "MPI_Reduce_scatter_block");
  if (scratch.defined()) output.copy_(scratch);
}

sdk::Status MpiCommunicator::allgather(const torch::Tensor& input, torch::Tensor& output) noexcept {
  return counted([&] {
    buffer_of(input, "allgather", "input");
    const Buffer out = buffer_of(output, "allgather", "output");
    mpi::check_allgather_shapes(input, output, size_, "allgather");
    const auto recorded = record(shape(CommOp::Allgather, input));
    watched(timeout_, describe("allgather", input) + " per rank" + where(),
            [&] { native_allgather(comm_, input, output, "allgather"); });
    return scatter_gather_traffic(out.bytes, size_);
  });
}

sdk::Status MpiCommunicator::reduce_scatter(const torch::Tensor& input, torch::Tensor& output,
                                            sdk::ReduceOp op) noexcept {
  return counted([&] {
    const Buffer in = buffer_of(input, "reduce_scatter", "input");
    buffer_of(output, "reduce_scatter", "output");
    mpi::check_reduce_scatter_shapes(input, output, size_, "reduce_scatter");
    mpi::reduce_op(input.scalar_type(), op);  // an unknown op fails before the call is recorded
    const auto recorded = record(shape(CommOp::ReduceScatter, input, static_cast<int>(op)));
    watched(timeout_, describe("reduce_scatter", input) + where(),
            [&] { native_reduce_scatter(comm_, input, output, op, "reduce_scatter"); });
    return scatter_gather_traffic(in.bytes, size_);
  });
}

sdk::Status MpiCommunicator::send(const torch::Tensor& tensor, int dst, int tag) noexcept {
  return counted([&] {
    const Buffer b = buffer_of(tensor, "send", "the");
    check_point_to_point(dst, tag, "send", "destination");
    CallShape call = shape(CommOp::Send, tensor, -1, dst);
    call.tag = tag;
    const auto recorded = record(call);
    watched_mpi(timeout_,
                describe("send", tensor) + " to rank " + std::to_string(dst) + " tag " + std::to_string(tag) + where(),
                "send", "MPI_Send", [&] { return MPI_Send(b.data, b.count, b.type, dst, tag, comm_); });
    return Traffic{b.bytes, 0, b.bytes};
  });
}

namespace {

// After MPI_Recv: a message of another length than the tensor is an error naming both lengths and the
// sender. `from` is "rank 3" (or "a rank" when MPI could not say which).
void check_received(int rc, const MPI_Status& status, const Buffer& b, const std::string& call, const std::string& from,
                    int tag) {
  int error_class = rc;
  if (rc != MPI_SUCCESS && MPI_Error_class(rc, &error_class) == MPI_SUCCESS && error_class == MPI_ERR_TRUNCATE)
    throw std::runtime_error(call + ": " + from + " sent more than the " + std::to_string(b.count) +
                             " elements expected (tag " + std::to_string(tag) + ")");
  check_mpi(rc, call, "MPI_Recv");
  int got = 0;
  MPI_Get_count(&status, b.type, &got);
  if (got != b.count)
    throw std::runtime_error(call + ": " + from + " sent " + std::to_string(got) + " elements, " +
                             std::to_string(b.count) + " expected (tag " + std::to_string(tag) + ")");
}

}  // namespace

sdk::Status MpiCommunicator::recv(torch::Tensor& tensor, int src, int tag) noexcept {
  return counted([&] {
    const Buffer b = buffer_of(tensor, "recv", "the");
    check_point_to_point(src, tag, "recv", "source");
    CallShape call = shape(CommOp::Recv, tensor, -1, src);
    call.tag = tag;
    const auto recorded = record(call);
    MPI_Status status;
    const int rc = watched(
        timeout_,
        describe("recv", tensor) + " from rank " + std::to_string(src) + " tag " + std::to_string(tag) + where(),
        [&] { return MPI_Recv(b.data, b.count, b.type, src, tag, comm_, &status); });
    check_received(rc, status, b, "recv", "rank " + std::to_string(src), tag);
    return Traffic{0, b.bytes, b.bytes};
  });
}

sdk::Status MpiCommunicator::recv_any(torch::Tensor& tensor, int tag, int* source) noexcept {
  return counted([&] {
    if (source == nullptr) throw std::invalid_argument("recv_any: source is null");
    const Buffer b = buffer_of(tensor, "recv_any", "the");
    check_tag(tag, "recv_any");
    if (size_ == 1) throw std::invalid_argument("recv_any: a one-rank job has no peers");
    CallShape call = shape(CommOp::RecvAny, tensor);
    call.tag = tag;
    const auto recorded = record(call);
    MPI_Status status;
    status.MPI_SOURCE = MPI_ANY_SOURCE;
    const int rc =
        watched(timeout_, describe("recv_any", tensor) + " from any rank tag " + std::to_string(tag) + where(),
                [&] { return MPI_Recv(b.data, b.count, b.type, MPI_ANY_SOURCE, tag, comm_, &status); });
    const int from = status.MPI_SOURCE;
    const bool known = from >= 0 && from < size_;
    check_received(rc, status, b, "recv_any", known ? "rank " + std::to_string(from) : "a rank", tag);
    *source = from;
    return Traffic{0, b.bytes, b.bytes};
  });
}

sdk::Status MpiCommunicator::barrier() noexcept {
  return counted([&] {
    CallShape call;
    call.op = CommOp::Barrier;
    const auto recorded = record(call);
    watched_mpi(timeout_, "barrier" + where(), "barrier", "MPI_Barrier", [&] { return MPI_Barrier(comm_); });
    return Traffic{};
  });
}

std::unique_ptr<HostCommunicator> make_mpi_communicator() { return std::make_unique<MpiCommunicator>(); }

}  // namespace gradsweep::comm
