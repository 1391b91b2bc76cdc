// collective_check's sections for the collectives, with each algorithm (native, ring): every dtype,
// op and awkward size, against references computed locally, and the byte counters.
#include "check_support.hpp"

namespace gradsweep::check {

void Checker::identity() {
  expect(std::string(comm_.backend()) == "mpi", "backend is mpi", comm_.backend());
  // One node: every rank shares memory with every other.
  expect(comm_.local_size() == n_ && comm_.local_rank() == rank_, "local rank and size",
         std::to_string(comm_.local_rank()) + " of " + std::to_string(comm_.local_size()));
  ok(comm_.barrier(), "barrier");
  traffic(0, 0, 1, 0, "barrier");
}

// with_algorithm: Native is the communicator itself; Ring is one view, made once, with the same ranks
// and counters, whose other calls are the backend's.
void Checker::algorithms() {
  sdk::Communicator* native = nullptr;
  sdk::Communicator* ring = nullptr;
  sdk::Communicator* again = nullptr;
  ok(comm_.with_algorithm(sdk::Algorithm::Native, &native), "with_algorithm(Native)");
  ok(comm_.with_algorithm(sdk::Algorithm::Ring, &ring), "with_algorithm(Ring)");
  ok(comm_.with_algorithm(sdk::Algorithm::Ring, &again), "with_algorithm(Ring) again");
  expect(native == &comm_, "Native is the communicator itself");
  expect(ring != nullptr && ring == again && ring != native, "Ring is one view, made once");
  if (ring == nullptr) return;
  expect(ring->rank() == rank_ && ring->size() == n_ && std::string(ring->backend()) == "mpi", "ring view's identity");
  sdk::Communicator* back = nullptr;
  ok(ring->with_algorithm(sdk::Algorithm::Native, &back), "view.with_algorithm(Native)");
  expect(back == &comm_, "the view's Native is the communicator");
  error(comm_.with_algorithm(static_cast<sdk::Algorithm>(7), &back), "unknown algorithm", "with_algorithm(7)");
  // Calls an algorithm does not change go to the backend and count on the shared counters.
  ok(ring->barrier(), "ring view barrier");
  torch::Tensor t = fill(rank_, 8, torch::kFloat);
  if (ok(ring->broadcast(t, 0), "ring view broadcast")) equal(t, fill(0, 8, torch::kFloat), "ring view broadcast");
  const bool last = rank_ == n_ - 1;
  traffic(n_ == 1 || last ? 0 : 32, rank_ == 0 ? 0 : 32, 2, 32, "ring view barrier + broadcast");
}

void Checker::allreduce() {
  for (sdk::Algorithm a : algorithms_checked()) {
    for (torch::ScalarType dtype : kDtypes)
      for (std::int64_t size : kSizes)
        for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min}) allreduce_one(a, dtype, size, op);
    allreduce_one(a, torch::kFloat, large_, ReduceOp::Sum);
    allreduce_one(a, torch::kBFloat16, kLarge16 + 3, ReduceOp::Sum);
    allreduce_one(a, torch::kHalf, kLarge16 + 1, ReduceOp::Max);
  }
}

void Checker::allreduce_one(sdk::Algorithm a, torch::ScalarType dtype, std::int64_t size, ReduceOp op) {
  const std::string what =
      name(std::string(algorithm_name(a)) + " allreduce", dtype, size, std::string(" ") + op_name(op));
  torch::Tensor t = fill(rank_, size, dtype);
  if (ok(with(a).allreduce(t, op), what)) equal(t, reference(op, n_, size, dtype), what);
  traffic(ring(t.nbytes(), 2), ring(t.nbytes(), 2), 1, t.nbytes(), what);
}

void Checker::broadcast() {
  for (int root = 0; root < n_; ++root)
    for (torch::ScalarType dtype : {torch::kFloat, torch::kBFloat16, torch::kLong})
      for (std::int64_t size : kSizes) broadcast_one(dtype, size, root);
  broadcast_one(torch::kFloat, large_, n_ - 1);
}

void Checker::broadcast_one(torch::ScalarType dtype, std::int64_t size, int root) {
  const std::string what = name("broadcast", dtype, size, " root " + std::to_string(root));
  torch::Tensor t = fill(rank_, size, dtype);
  if (ok(comm_.broadcast(t, root), what)) equal(t, fill(root, size, dtype), what);
  // A chain from the root: all but the root receive S, all but the root's left neighbour send S.
  const std::uint64_t s = t.nbytes();
  const bool last = rank_ == (root + n_ - 1) % n_;
  traffic(n_ == 1 || last ? 0 : s, rank_ == root ? 0 : s, 1, s, what);
}

void Checker::allgather() {
  for (sdk::Algorithm a : algorithms_checked()) {
    for (torch::ScalarType dtype : {torch::kFloat, torch::kBFloat16, torch::kLong, torch::kByte})
      for (std::int64_t size : kSizes) {
        allgather_one(a, dtype, size, false);
        allgather_one(a, dtype, size, true);
      }
    allgather_one(a, torch::kFloat, large_ / n_ + 1, false);
  }
}

// in_place: the input is this rank's slot of the output, as ZeRO-style strategies lay it out.
void Checker::allgather_one(sdk::Algorithm a, torch::ScalarType dtype, std::int64_t size, bool in_place) {
  const std::string what =
      name(std::string(algorithm_name(a)) + " allgather", dtype, size, in_place ? " in place" : "");
  torch::Tensor output = torch::full({size * n_}, -1, dtype);
  torch::Tensor input = fill(rank_, size, dtype);
  if (in_place) {
    output.narrow(0, rank_ * size, size).copy_(input);
    input = output.narrow(0, rank_ * size, size);
  }
  std::vector<torch::Tensor> parts;
  for (int r = 0; r < n_; ++r) parts.push_back(fill(r, size, dtype));
  if (ok(with(a).allgather(input, output), what)) equal(output, torch::cat(parts), what);
  traffic(ring(output.nbytes(), 1), ring(output.nbytes(), 1), 1, output.nbytes(), what);
}

void Checker::reduce_scatter() {
  for (sdk::Algorithm a : algorithms_checked()) {
    for (torch::ScalarType dtype : {torch::kFloat, torch::kBFloat16, torch::kHalf, torch::kLong, torch::kByte})
      for (std::int64_t size : kSizes)
        for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min}) reduce_scatter_one(a, dtype, size, op, false);
    reduce_scatter_one(a, torch::kInt, 1021, ReduceOp::Sum, true);
    reduce_scatter_one(a, torch::kFloat, large_ / n_ + 1, ReduceOp::Sum, false);
  }
}

// in_place: the output is this rank's chunk of the input.
void Checker::reduce_scatter_one(sdk::Algorithm a, torch::ScalarType dtype, std::int64_t size, ReduceOp op,
                                 bool in_place) {
  const std::string what = name(std::string(algorithm_name(a)) + " reduce_scatter", dtype, size,
                                std::string(" ") + op_name(op) + (in_place ? " in place" : ""));
  const torch::Tensor input = fill(rank_, size * n_, dtype);
  torch::Tensor output = in_place ? input.narrow(0, rank_ * size, size) : torch::full({size}, -1, dtype);
  if (ok(with(a).reduce_scatter(input, output, op), what))
    equal(output, reference(op, n_, size, dtype, rank_ * size), what);
  traffic(ring(input.nbytes(), 1), ring(input.nbytes(), 1), 1, input.nbytes(), what);
}

}  // namespace gradsweep::check
