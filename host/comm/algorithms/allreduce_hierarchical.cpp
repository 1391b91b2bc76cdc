// Hierarchical allreduce: intra-node reduce-scatter, cross-node allreduce of one chunk, intra-node
// all-gather (hierarchical.hpp). All three passes are gradsweep's pipelined ring.
#include "comm/algorithms/hierarchical.hpp"

#include <chrono>

namespace gradsweep::comm::hierarchical {

void allreduce(ring::Transport& node, ring::Transport& cross, torch::Tensor& tensor, sdk::ReduceOp op,
               const ring::Tuning& tuning, Phases* phases) {
  using Clock = std::chrono::steady_clock;
  const auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  if (phases != nullptr) *phases = {};
  if (tensor.numel() == 0) return;
  torch::Tensor flat = tensor.view({-1});
  const ring::Chunks chunks{flat.numel(), node.size()};
  const auto t0 = Clock::now();
  if (chunks.n > 1) ring::reduce_scatter_in_place(node, flat, chunks, op, tuning);
  const auto t1 = Clock::now();
  // Local rank r now holds its node's reduction of chunk r; the ranks with local rank r on the other
  // nodes hold theirs of the same chunk (same L, same cut), so a ring over them completes it.
  const int mine = node.rank();
  if (cross.size() > 1 && chunks.size(mine) > 0) {
    torch::Tensor shard = flat.narrow(0, chunks.begin(mine), chunks.size(mine));
    ring::allreduce(cross, shard, op, tuning);
  }
  const auto t2 = Clock::now();
  if (chunks.n > 1) ring::allgather_in_place(node, flat, chunks, tuning);
  const auto t3 = Clock::now();
  if (phases != nullptr) *phases = {seconds(t0, t1) + seconds(t2, t3), seconds(t1, t2)};
}

}  // namespace gradsweep::comm::hierarchical
