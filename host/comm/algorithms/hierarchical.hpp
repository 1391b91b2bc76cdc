#pragma once
// Hierarchical allreduce (Horovod's, NCCL's intra-node/inter-node split), over two rings: `node`, the
// L ranks of this rank's node, and `cross`, the N ranks (one per node) with this rank's local rank.
// Reduce-scatter inside the node leaves local rank r with the node's sum of chunk r; an allreduce of
// chunk r across the nodes' local ranks r makes it the global sum; an all-gather inside the node hands
// every chunk to every local rank. A node's link then carries 2(N-1)/N of the tensor in each direction
// instead of the flat ring's 2(P-1)/P over P = N*L ranks (docs/communicators.md).
//
// Every node must have the same number of ranks L (the chunks of the intra-node cut must line up with
// the ranks of the cross-node ring); the MPI backend falls back to the flat ring otherwise.
#include "comm/algorithms/ring.hpp"

namespace gradsweep::comm::hierarchical {

// Seconds spent in each phase of the last call, for `gradsweep bench comm`'s intra/inter bandwidths.
struct Phases {
  double intra_seconds = 0.0;  // reduce-scatter plus all-gather inside the node
  double inter_seconds = 0.0;  // the allreduce of this rank's chunk across nodes
};

void allreduce(ring::Transport& node, ring::Transport& cross, torch::Tensor& tensor, sdk::ReduceOp op,
               const ring::Tuning& tuning, Phases* phases = nullptr);

}  // namespace gradsweep::comm::hierarchical
