#pragma once
// The byte-counting convention every backend follows (docs/communicators.md): whatever algorithm moves
// the data, a collective counts what the bandwidth-optimal ring would move, as nccl-tests' bus bandwidth
// assumes, so that a strategy's traffic reads the same on every backend and algorithm.
#include <cstdint>

namespace gradsweep::comm {

// Per rank, each way, for a collective of S = `bytes` (nccl-tests' size) on n ranks run as a ring:
// allreduce (passes = 2) 2(n-1)/n * S; allgather and reduce_scatter (passes = 1) (n-1)/n * S, with S
// the full (gathered) size. Rounds down; 0 at one rank.
inline std::uint64_t ring_share(std::uint64_t bytes, int n, int passes) {
  return n <= 1 ? 0
                : static_cast<std::uint64_t>(passes) * static_cast<std::uint64_t>(n - 1) * bytes /
                      static_cast<std::uint64_t>(n);
}

// What one call moved, counted on this rank, and its size S.
struct Traffic {
  std::uint64_t sent = 0, received = 0;
  std::uint64_t payload = 0;
};

// allreduce and allreduce_async of a tensor of `bytes`.
inline Traffic allreduce_traffic(std::uint64_t bytes, int n) {
  const std::uint64_t each_way = ring_share(bytes, n, 2);
  return {each_way, each_way, bytes};
}
// reduce_scatter (`bytes` = the input) and allgather (`bytes` = the output).
inline Traffic scatter_gather_traffic(std::uint64_t bytes, int n) {
  const std::uint64_t each_way = ring_share(bytes, n, 1);
  return {each_way, each_way, bytes};
}

// broadcast from `root`, counted as a pipelined chain (what nccl-tests' busbw factor 1 assumes): every rank but
// the root receives S, every rank but the last in the chain (the root's left neighbour) sends S.
inline Traffic broadcast_traffic(std::uint64_t bytes, int n, int rank, int root) {
  const int last = (root + n - 1) % n;
  return {rank == last ? 0 : bytes, rank == root ? 0 : bytes, bytes};
}

}  // namespace gradsweep::comm
