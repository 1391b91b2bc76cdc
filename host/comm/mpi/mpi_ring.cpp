// The MPI backend's ring algorithms (comm/algorithms/, over mpi::RingTransport) and with_algorithm.
// They take the same tensors, check the same things and count the same bytes as the native calls; only
// the way the data moves differs.
#include "comm/mpi/mpi_buffer.hpp"
#include "comm/mpi/mpi_communicator.hpp"
#include "comm/mpi/mpi_ring_transport.hpp"

#include <spdlog/spdlog.h>

#include <stdexcept>
#include <utility>

namespace gradsweep::comm {
namespace {

using mpi::buffer_of;

void check_op(sdk::ReduceOp op, const std::string& call) {
  if (static_cast<std::uint32_t>(op) > 2)
    throw std::invalid_argument(call + ": unknown ReduceOp " + std::to_string(static_cast<std::uint32_t>(op)));
}

}  // namespace

sdk::Status MpiCommunicator::with_algorithm(sdk::Algorithm algorithm, sdk::Communicator** view) noexcept {
  if (view == nullptr) return sdk::Status::Error("with_algorithm: view is null");
  switch (algorithm) {
    case sdk::Algorithm::Native: *view = this; return sdk::Status::Ok();
    case sdk::Algorithm::Ring: *view = ring_view_.get(); return sdk::Status::Ok();
    case sdk::Algorithm::Hierarchical:
      if (rank_ == 0 && !std::exchange(split_logged_, true)) {
        if (split_->uneven().empty())
          spdlog::info("hierarchical allreduce: {} node(s) of {} rank(s){}", split_->cross_size(), split_->node_size(),
                       mpi::ranks_per_node_override() > 0 ? " (GRADSWEEP_RANKS_PER_NODE)" : "");
        else
          spdlog::warn("hierarchical allreduce runs as the flat ring: {}", split_->uneven());
      }
      *view = hierarchical_view_.get();
      return sdk::Status::Ok();
  }
  return sdk::Status::Error("with_algorithm: unknown algorithm " +
                            std::to_string(static_cast<std::uint32_t>(algorithm)) +
                            " (the MPI backend has native, ring and hierarchical)");
}

void MpiCommunicator::ring_allreduce(MPI_Comm comm, torch::Tensor& tensor, sdk::ReduceOp op, const std::string& call) {
  buffer_of(tensor, call, "the");  // its checks
  check_op(op, call);
  mpi::RingTransport transport(comm, rank_, size_, call, peer_waits_.get());
  ring::allreduce(transport, tensor, op, ring_tuning_);
}

void MpiCommunicator::hierarchical_allreduce(const mpi::NodeSplit& split, MPI_Comm flat, torch::Tensor& tensor,
                                             sdk::ReduceOp op, const std::string& call) {
  if (!split.uneven().empty()) return ring_allreduce(flat, tensor, op, call);
  buffer_of(tensor, call, "the");  // its checks
  check_op(op, call);
  mpi::RingTransport node(split.node(), split.node_rank(), split.node_size(), call + " (intra-node)");
  mpi::RingTransport cross(split.cross(), split.cross_rank(), split.cross_size(), call + " (inter-node)");
  hierarchical::Phases phases;
  hierarchical::allreduce(node, cross, tensor, op, ring_tuning_, &phases);
  if (&split == split_.get()) last_phases_ = phases;
}

sdk::Status MpiCommunicator::allreduce_by(sdk::Algorithm algorithm, torch::Tensor& tensor, sdk::ReduceOp op) noexcept {
  if (algorithm == sdk::Algorithm::Native) return allreduce(tensor, op);
  if (algorithm == sdk::Algorithm::Hierarchical)
    return guarded([&] { hierarchical_allreduce(*split_, ring_comm_, tensor, op, "hierarchical allreduce"); });
  return guarded([&] { ring_allreduce(ring_comm_, tensor, op, "ring allreduce"); });
}

sdk::Status MpiCommunicator::allgather_by(sdk::Algorithm algorithm, const torch::Tensor& input,
                                          torch::Tensor& output) noexcept {
  if (algorithm == sdk::Algorithm::Native) return allgather(input, output);
  return guarded([&] {
    buffer_of(input, "ring allgather", "input");
    buffer_of(output, "ring allgather", "output");
    mpi::check_allgather_shapes(input, output, size_, "ring allgather");
    mpi::RingTransport transport(ring_comm_, rank_, size_, "ring allgather", peer_waits_.get());
    ring::allgather(transport, input, output, ring_tuning_);
  });
}

sdk::Status MpiCommunicator::reduce_scatter_by(sdk::Algorithm algorithm, const torch::Tensor& input,
                                               torch::Tensor& output, sdk::ReduceOp op) noexcept {
  if (algorithm == sdk::Algorithm::Native) return reduce_scatter(input, output, op);
  return guarded([&] {
    buffer_of(input, "ring reduce_scatter", "input");
    buffer_of(output, "ring reduce_scatter", "output");
    mpi::check_reduce_scatter_shapes(input, output, size_, "ring reduce_scatter");
    check_op(op, "ring reduce_scatter");
    mpi::RingTransport transport(ring_comm_, rank_, size_, "ring reduce_scatter", peer_waits_.get());
    ring::reduce_scatter(transport, input, output, op, ring_tuning_);
  });
}

}  // namespace gradsweep::comm
