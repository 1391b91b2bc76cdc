// The MPI backend: every rank of the job, CPU tensors. This file: set-up, the native collectives (one
// MPI call each) and point-to-point. The ring algorithms are in mpi_ring.cpp,
// asynchronous collectives in mpi_async.cpp.
//
// Errors come back as codes (MPI_ERRORS_RETURN) and leave as Status messages that name the call, the
// MPI function and MPI_Error_string's text. Counting, the watchdog, the flight recorder and the collective
// check are the stack's layers around it (comm/layers/communicator_stack.hpp), as for every backend; the counting
// layer counts bytes by the ring convention whatever algorithm Open MPI picks underneath.
#include "comm/mpi/mpi_communicator.hpp"

#include "comm/mpi/mpi_buffer.hpp"
#include "comm/mpi/mpi_reduce_ops.hpp"
#include "comm/mpi/mpi_runtime.hpp"
#include "comm/core/tensor_memory.hpp"
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

MpiCommunicator::MpiCommunicator(MPI_Comm base, HostCommunicator* parent, const std::string& name) {
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
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
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
  for (MPI_Comm* c : {&comm_, &ring_comm_, &async_comm_})
    if (*c != MPI_COMM_NULL && mpi::active()) MPI_Comm_free(c);
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

sdk::Status MpiCommunicator::allreduce(torch::Tensor& tensor, sdk::ReduceOp op) noexcept {
  return guarded([&] {
    const Buffer b = buffer_of(tensor, "allreduce", "the");
    const MPI_Op mop = mpi::reduce_op(tensor.scalar_type(), op);
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, b.data, b.count, b.type, mop, comm_), "allreduce", "MPI_Allreduce");
  });
}

// Counted as a pipelined chain from the root (what nccl-tests' busbw factor 1 assumes): every rank but
// the root receives S, every rank but the last in the chain (the root's left neighbour) sends S.
sdk::Status MpiCommunicator::broadcast(torch::Tensor& tensor, int root) noexcept {
  return guarded([&] {
    const Buffer b = buffer_of(tensor, "broadcast", "the");
    check_peer(root, "broadcast", "root");
    check_mpi(MPI_Bcast(b.data, b.count, b.type, root, comm_), "broadcast", "MPI_Bcast");
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
  return guarded([&] {
    buffer_of(input, "allgather", "input");
    buffer_of(output, "allgather", "output");
    mpi::check_allgather_shapes(input, output, size_, "allgather");
    native_allgather(comm_, input, output, "allgather");
  });
}

sdk::Status MpiCommunicator::reduce_scatter(const torch::Tensor& input, torch::Tensor& output,
                                            sdk::ReduceOp op) noexcept {
  return guarded([&] {
    buffer_of(input, "reduce_scatter", "input");
    buffer_of(output, "reduce_scatter", "output");
    mpi::check_reduce_scatter_shapes(input, output, size_, "reduce_scatter");
    native_reduce_scatter(comm_, input, output, op, "reduce_scatter");
  });
}

sdk::Status MpiCommunicator::send(const torch::Tensor& tensor, int dst, int tag) noexcept {
  return guarded([&] {
    const Buffer b = buffer_of(tensor, "send", "the");
    check_point_to_point(dst, tag, "send", "destination");
    check_mpi(MPI_Send(b.data, b.count, b.type, dst, tag, comm_), "send", "MPI_Send");
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
  return guarded([&] {
    const Buffer b = buffer_of(tensor, "recv", "the");
    check_point_to_point(src, tag, "recv", "source");
    MPI_Status status;
    const int rc = MPI_Recv(b.data, b.count, b.type, src, tag, comm_, &status);
    check_received(rc, status, b, "recv", "rank " + std::to_string(src), tag);
  });
}

sdk::Status MpiCommunicator::recv_any(torch::Tensor& tensor, int tag, int* source) noexcept {
  return guarded([&] {
    if (source == nullptr) throw std::invalid_argument("recv_any: source is null");
    const Buffer b = buffer_of(tensor, "recv_any", "the");
    check_tag(tag, "recv_any");
    if (size_ == 1) throw std::invalid_argument("recv_any: a one-rank job has no peers");
    MPI_Status status;
    status.MPI_SOURCE = MPI_ANY_SOURCE;
    const int rc = MPI_Recv(b.data, b.count, b.type, MPI_ANY_SOURCE, tag, comm_, &status);
    const int from = status.MPI_SOURCE;
    const bool known = from >= 0 && from < size_;
    check_received(rc, status, b, "recv_any", known ? "rank " + std::to_string(from) : "a rank", tag);
    *source = from;
  });
}

sdk::Status MpiCommunicator::barrier() noexcept {
  return guarded([&] { check_mpi(MPI_Barrier(comm_), "barrier", "MPI_Barrier"); });
}

std::unique_ptr<HostCommunicator> make_mpi_communicator() { return std::make_unique<MpiCommunicator>(); }

}  // namespace gradsweep::comm
