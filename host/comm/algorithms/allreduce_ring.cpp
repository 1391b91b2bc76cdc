// Ring allreduce: a reduce-scatter pass leaves rank r with the reduced chunk r, an all-gather pass
// hands every reduced chunk to every rank. Each rank sends and receives 2(n-1)/n of the tensor, the
// least any allreduce can, whatever n; the price is 2(n-1) latencies, which segments amortise.
#include "comm/algorithms/ring.hpp"

namespace gradsweep::comm::ring {

void allreduce(Transport& transport, torch::Tensor& tensor, sdk::ReduceOp op, const Tuning& tuning) {
  const Chunks chunks{tensor.numel(), transport.size()};
  if (chunks.n == 1 || chunks.numel == 0) return;
  // Chunks differ by at most one element when the size is not a multiple of n: both passes use the
  // same cut, so rank r reduces exactly the chunk it then sends around.
  torch::Tensor flat = tensor.view({-1});
  reduce_scatter_in_place(transport, flat, chunks, op, tuning);
  allgather_in_place(transport, flat, chunks, tuning);
}

}  // namespace gradsweep::comm::ring
