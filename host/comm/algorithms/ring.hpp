#pragma once
// gradsweep's bandwidth-optimal ring collectives (one file each: reduce_scatter_ring.cpp,
// allgather_ring.cpp, allreduce_ring.cpp), written against the small point-to-point interface below
// rather than against MPI, so that the same files can run over another transport (NCCL's ncclSend/
// ncclRecv) and strategies can compare a ring with each library's own algorithm on equal terms.
//
// A ring over n ranks moves (n-1)/n of the data each way per pass, the least any algorithm can
// (allreduce: a reduce-scatter pass then an all-gather pass). Each step's chunk is cut into segments
// that are pipelined: while segment k is being reduced, segment k+1 is already on the wire, and step
// s+1 starts sending segment k as soon as step s has finished reducing it.
//
// Tensors are contiguous and on the device the transport reads; reductions use LibTorch ops in the
// tensor's own dtype, so bfloat16/float16 partial sums are rounded at every step, as in NCCL.
#include <gradsweep/sdk/services.hpp>

#include <torch/types.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace gradsweep::comm::ring {

// The point-to-point a ring runs over. A rank only ever talks to its neighbours: it sends to the right
// (rank + 1 mod n) and receives from the left (rank - 1 mod n). An exchange is one send and one receive
// started together and finished together (full duplex), the shape of MPI_Isend + MPI_Irecv and of
// ncclGroupStart, ncclSend, ncclRecv, ncclGroupEnd. Exchanges are matched in the order they start:
// the k-th receive a rank starts gets the k-th send its left neighbour started.
class Transport {
 public:
  using Ticket = std::uint64_t;
  // How many exchanges may be in flight at once (started, not finished).
  static constexpr int kMaxInFlight = 8;

  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Starts sending `send_bytes` at `send` to the right neighbour and receiving `recv_bytes` into `recv`
  // from the left one; a side of 0 bytes is skipped (the peer skips it too: both sizes are known to both).
  // Neither buffer may be touched until finish() of the ticket returns.
  virtual Ticket start(const void* send, std::size_t send_bytes, void* recv, std::size_t recv_bytes) = 0;
  // Waits for that exchange; throws std::runtime_error naming the transport's call if it failed.
  // Tickets are finished in the order they were started.
  virtual void finish(Ticket ticket) = 0;
};

struct Tuning {
  // Bytes per pipelined segment (rounded down to whole elements, at least one), and exchanges started ahead
  // of the one being finished (1 .. Transport::kMaxInFlight - 1). Between nodes (Open MPI over TCP) the
  // link idles whenever no exchange is queued while the sending rank waits for a core: 2 nodes at 1 Gbit/s
  // on a busy 2-core machine, 2 MiB with lookahead 1 reached 76-79% of the link, 512 KiB with lookahead 4
  // 88-96% (docs/measurements/communicators.md). On shared memory the two were within noise of each other
  // (2 and 4 ranks, 16-64 MiB; docs/measurements/communicators.md), where fewer round trips had mattered with
  // lookahead 1.
  std::size_t segment_bytes = 512 * 1024;
  int lookahead = 4;
};

// A flat tensor of `numel` elements cut into n chunks as evenly as possible: the first numel mod n
// chunks have one element more. Every rank computes the same cut.
struct Chunks {
  std::int64_t numel = 0;
  int n = 1;
  std::int64_t begin(int c) const { return c * (numel / n) + std::min<std::int64_t>(c, numel % n); }
  std::int64_t size(int c) const { return numel / n + (c < numel % n ? 1 : 0); }
  std::int64_t largest() const { return size(0); }
};

// c mod n in [0, n): the chunk that a ring step's arithmetic (r - step - 1) names.
inline int wrap(int c, int n) { return ((c % n) + n) % n; }

// In place over `flat` cut by `chunks` (chunks.n == transport.size()): afterwards chunk r of `flat` on
// rank r holds the reduction over ranks of chunk r; the other chunks hold partial results.
void reduce_scatter_in_place(Transport& transport, torch::Tensor& flat, const Chunks& chunks, sdk::ReduceOp op,
                             const Tuning& tuning);
// `input` is size() x `output`: rank r receives the reduction of the r-th chunk. `input` is left as is.
void reduce_scatter(Transport& transport, const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op,
                    const Tuning& tuning);

// In place over `flat` cut by `chunks`: rank r's chunk r goes to every rank's chunk r.
void allgather_in_place(Transport& transport, torch::Tensor& flat, const Chunks& chunks, const Tuning& tuning);
// `output` is size() x `input`, rank-major. `input` may be this rank's slot of `output`.
void allgather(Transport& transport, const torch::Tensor& input, torch::Tensor& output, const Tuning& tuning);

// Reduce-scatter then all-gather, in place, for any number of elements (chunks differ by at most one).
void allreduce(Transport& transport, torch::Tensor& tensor, sdk::ReduceOp op, const Tuning& tuning);

}  // namespace gradsweep::comm::ring
