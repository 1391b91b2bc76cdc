// collective_check's section for reduce_scatter_async and allgather_async (ABI 1.4), with each
// algorithm: the result equals the blocking call's bit for bit, the ZeRO layouts (output = this rank's
// slot of the input, and the reverse) work, several calls of all three async kinds in flight complete in
// the order issued, and the counters match the blocking calls'.
#include "check_support.hpp"

namespace gradsweep::check {

void Checker::scatter_gather_async() {
  for (sdk::Algorithm a : algorithms_checked()) {
    for (std::int64_t size : {std::int64_t{1}, std::int64_t{1021}, large_ / (4 * n_) + 1}) {
      reduce_scatter_async_one(a, size, false);
      allgather_async_one(a, size, false);
    }
    reduce_scatter_async_one(a, 1021, true);
    allgather_async_one(a, 1021, true);
    scatter_gather_in_order(a);
  }
  torch::Tensor in = torch::zeros({4 * n_}), out = torch::zeros({4});
  error(comm_.reduce_scatter_async(in, out, ReduceOp::Sum, nullptr), "reduce_scatter_async: request is null",
        "reduce_scatter_async without a request");
  std::unique_ptr<sdk::Request> request;
  torch::Tensor wrong = torch::zeros({4 * n_ + 1});
  error(with(sdk::Algorithm::Ring).allgather_async(out, wrong, &request), "ring allgather_async: output has",
        "ring allgather_async with a wrong output size");
  traffic(0, 0, 0, 0, "async scatter/gather argument errors");  // refused by the stack's checks
}

// in_place: the output is this rank's chunk of the input (ZeRO's gradient layout).
void Checker::reduce_scatter_async_one(sdk::Algorithm a, std::int64_t size, bool in_place) {
  const std::string what =
      name(std::string(algorithm_name(a)) + " reduce_scatter_async", torch::kFloat, size, in_place ? " in place" : "");
  const torch::Tensor input = fill(rank_, size * n_, torch::kFloat);
  torch::Tensor blocking = torch::full({size}, -1.0f);
  ok(with(a).reduce_scatter(input, blocking, ReduceOp::Sum), what + " blocking");
  comm_.take_stats();
  torch::Tensor source = input.clone();
  torch::Tensor output = in_place ? source.narrow(0, rank_ * size, size) : torch::full({size}, -1.0f);
  std::unique_ptr<sdk::Request> request;
  if (ok(with(a).reduce_scatter_async(source, output, ReduceOp::Sum, &request), what + " start") &&
      ok(request->wait(), what + " wait")) {
    equal(output, blocking, what + " equals the blocking call");
    equal(output, reference(ReduceOp::Sum, n_, size, torch::kFloat, rank_ * size), what);
  }
  traffic(ring(input.nbytes(), 1), ring(input.nbytes(), 1), 1, input.nbytes(), what);
}

// in_place: the input is this rank's slot of the output (ZeRO's parameter layout).
void Checker::allgather_async_one(sdk::Algorithm a, std::int64_t size, bool in_place) {
  const std::string what =
      name(std::string(algorithm_name(a)) + " allgather_async", torch::kFloat, size, in_place ? " in place" : "");
  torch::Tensor blocking = torch::full({size * n_}, -1.0f);
  ok(with(a).allgather(fill(rank_, size, torch::kFloat), blocking), what + " blocking");
  comm_.take_stats();
  torch::Tensor output = torch::full({size * n_}, -1.0f);
  torch::Tensor input = fill(rank_, size, torch::kFloat);
  if (in_place) {
    output.narrow(0, rank_ * size, size).copy_(input);
    input = output.narrow(0, rank_ * size, size);
  }
  std::unique_ptr<sdk::Request> request;
  if (ok(with(a).allgather_async(input, output, &request), what + " start") && ok(request->wait(), what + " wait"))
    equal(output, blocking, what + " equals the blocking call");
  traffic(ring(output.nbytes(), 1), ring(output.nbytes(), 1), 1, output.nbytes(), what);
}

// Reduce-scatter, allgather, allreduce and reduce-scatter again in flight at once; waiting for the last
// alone must leave the first three complete (their outputs are read before their own wait()).
void Checker::scatter_gather_in_order(sdk::Algorithm a) {
  const std::string what = std::string(algorithm_name(a)) + " async reduce_scatter/allgather/allreduce in order";
  const std::int64_t size = large_ / (8 * n_) + 3;
  const torch::Tensor scatter_in = fill(rank_, size * n_, torch::kFloat);
  torch::Tensor scattered = torch::zeros({size}), gathered = torch::zeros({1021 * n_});
  torch::Tensor reduced = fill(rank_, 1021, torch::kFloat), last = torch::zeros({1});
  const torch::Tensor last_in = fill(rank_, n_, torch::kFloat);
  std::vector<std::unique_ptr<sdk::Request>> requests(4);
  ok(with(a).reduce_scatter_async(scatter_in, scattered, ReduceOp::Sum, &requests[0]), what + " start 0");
  ok(with(a).allgather_async(fill(rank_, 1021, torch::kFloat), gathered, &requests[1]), what + " start 1");
  ok(with(a).allreduce_async(reduced, ReduceOp::Sum, &requests[2]), what + " start 2");
  ok(with(a).reduce_scatter_async(last_in, last, ReduceOp::Sum, &requests[3]), what + " start 3");
  if (!ok(requests[3] ? requests[3]->wait() : sdk::Status::Error("no request"), what + " wait last")) return;
  equal(scattered, reference(ReduceOp::Sum, n_, size, torch::kFloat, rank_ * size), what + " #0");
  std::vector<torch::Tensor> parts;
  for (int r = 0; r < n_; ++r) parts.push_back(fill(r, 1021, torch::kFloat));
  equal(gathered, torch::cat(parts), what + " #1");
  equal(reduced, reference(ReduceOp::Sum, n_, 1021, torch::kFloat), what + " #2");
  equal(last, reference(ReduceOp::Sum, n_, 1, torch::kFloat, rank_), what + " #3");
  for (auto& r : requests) ok(r->wait(), what + " wait");
  comm_.take_stats();
}

}  // namespace gradsweep::check
