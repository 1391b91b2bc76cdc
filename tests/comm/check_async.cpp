// collective_check's sections for asynchronous allreduce, with each algorithm: several in flight,
// waited out of order or not at all, completing in the order issued, beside blocking calls, and making
// progress while the caller computes without entering MPI.
#include "check_support.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

namespace gradsweep::check {
namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

void Checker::allreduce_async() {
  for (sdk::Algorithm a : algorithms_checked()) {
    for (std::int64_t size : kSizes) allreduce_async_case(a, {size, size, size});
    allreduce_async_case(a, {large_ / 4, 1021, 1});
    async_in_order(a);
    async_beside_blocking(a);
  }
  torch::Tensor t = torch::zeros({4});
  error(comm_.allreduce_async(t, ReduceOp::Sum, nullptr), "request is null", "async without a request");
  error(with(sdk::Algorithm::Ring).allreduce_async(t, ReduceOp::Sum, nullptr), "ring allreduce_async: request is null",
        "ring async without a request");
  traffic(0, 0, 0, 0, "async argument errors");  // refused by the stack's checks, uncounted
}

// Three in flight at once (the second in bfloat16), waited out of order; the second is never waited:
// destroying its request completes it.
void Checker::allreduce_async_case(sdk::Algorithm a, const std::vector<std::int64_t>& sizes) {
  const std::string what = name(std::string(algorithm_name(a)) + " allreduce_async", torch::kFloat, sizes[0]);
  std::vector<torch::Tensor> tensors;
  std::vector<std::unique_ptr<sdk::Request>> requests(3);
  std::uint64_t bytes = 0, payload = 0;
  for (int i = 0; i < 3; ++i) {
    tensors.push_back(fill(rank_ + i, sizes[i], i == 1 ? torch::kBFloat16 : torch::kFloat));
    ok(with(a).allreduce_async(tensors[i], ReduceOp::Sum, &requests[i]), what + " start");
    bytes += ring(tensors[i].nbytes(), 2);
    payload += tensors[i].nbytes();
  }
  for (int i : {2, 0}) ok(requests[i] ? requests[i]->wait() : sdk::Status::Error("no request"), what + " wait");
  requests.clear();
  for (int i = 0; i < 3; ++i) {
    // Rank r sent fill(r + i): the sum over r of (r + i + 1) is n(n+1)/2 + n i.
    const torch::Tensor want = pattern(sizes[i]) * (n_ * (n_ + 1) / 2 + n_ * i);
    equal(tensors[i], want.to(tensors[i].scalar_type()), what + " #" + std::to_string(i));
  }
  traffic(bytes, bytes, 3, payload, what);
}

// Four in flight; once the last is waited, the first three must be complete already (they run in the
// order issued): their tensors are read before their own wait().
void Checker::async_in_order(sdk::Algorithm a) {
  const std::string what = std::string(algorithm_name(a)) + " allreduce_async in order";
  const std::vector<std::int64_t> sizes{large_ / 4, 1021, 1, large_ / 8};
  std::vector<torch::Tensor> tensors;
  std::vector<std::unique_ptr<sdk::Request>> requests(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    tensors.push_back(fill(rank_, sizes[i], torch::kFloat));
    ok(with(a).allreduce_async(tensors[i], ReduceOp::Sum, &requests[i]), what + " start");
  }
  ok(requests.back()->wait(), what + " wait last");
  for (std::size_t i = 0; i < sizes.size(); ++i)
    equal(tensors[i], reference(ReduceOp::Sum, n_, sizes[i], torch::kFloat), what + " #" + std::to_string(i));
  for (auto& r : requests) ok(r->wait(), what + " wait");
  comm_.take_stats();
}

// An async operation in flight (on its own communicator) while the caller makes blocking calls on the
// main one: neither waits for nor disturbs the other.
void Checker::async_beside_blocking(sdk::Algorithm a) {
  const std::string what = std::string(algorithm_name(a)) + " allreduce_async beside blocking calls";
  torch::Tensor big = fill(rank_, large_ / 4, torch::kFloat);
  std::unique_ptr<sdk::Request> request;
  ok(with(a).allreduce_async(big, ReduceOp::Sum, &request), what + " start");
  torch::Tensor small = fill(rank_, 1021, torch::kInt);
  if (ok(comm_.allreduce(small, ReduceOp::Max), what + " allreduce"))
    equal(small, reference(ReduceOp::Max, n_, 1021, torch::kInt), what + " allreduce");
  torch::Tensor gathered = torch::zeros({4 * n_}, torch::kLong);
  if (ok(with(a).allgather(fill(rank_, 4, torch::kLong), gathered), what + " allgather")) {
    std::vector<torch::Tensor> parts;
    for (int r = 0; r < n_; ++r) parts.push_back(fill(r, 4, torch::kLong));
    equal(gathered, torch::cat(parts), what + " allgather");
  }
  if (ok(request->wait(), what + " wait")) equal(big, reference(ReduceOp::Sum, n_, large_ / 4, torch::kFloat), what);
  comm_.take_stats();
}

void Checker::async_progress() {
  if (n_ == 1) return;  // nothing to wait for: the operation is over before the caller could compute
  for (sdk::Algorithm a : algorithms_checked()) async_progress_one(a);
}

// The caller starts a large allreduce, then computes (here: sleeps, never entering MPI) for ten times as
// long as the allreduce takes when blocking. The worker must have finished it meanwhile, so wait()
// returns almost at once. Asserted loosely (waited < 30% of the operation's busy time) on an operation of
// at least about 0.1 s, so that a loaded machine's scheduling delays (milliseconds) cannot make it flaky;
// Open MPI's MPI_Iallreduce, which moves only inside MPI calls, fails it.
void Checker::async_progress_one(sdk::Algorithm a) {
  const std::string what = std::string(algorithm_name(a)) + " allreduce_async progresses while the caller computes";
  // The slowest rank's time for a blocking allreduce of `size` floats: the same on every rank.
  const auto blocking_seconds = [&](std::int64_t size) {
    torch::Tensor t = fill(rank_, size, torch::kFloat);
    ok(comm_.barrier(), what + " barrier");
    const auto t0 = Clock::now();
    ok(with(a).allreduce(t, ReduceOp::Sum), what + " blocking");
    torch::Tensor longest = torch::full({1}, seconds_since(t0), torch::kDouble);
    ok(comm_.allreduce(longest, ReduceOp::Max), what + " slowest rank");
    return longest.item<double>();
  };
  std::int64_t size = large_ / 4;
  double blocking = blocking_seconds(size);
  if (blocking < 0.1) {
    size *= std::min<std::int64_t>(16, static_cast<std::int64_t>(std::ceil(0.1 / std::max(blocking, 1e-4))));
    blocking = blocking_seconds(size);
  }
  torch::Tensor t = fill(rank_, size, torch::kFloat);
  ok(comm_.barrier(), what + " barrier");
  comm_.take_stats();

  std::unique_ptr<sdk::Request> request;
  ok(with(a).allreduce_async(t, ReduceOp::Sum, &request), what + " start");
  // Ten times the blocking time: beside another MPI test on the 2 cores the operation once took 8.6 times as
  // long as its blocking twin (0.65 s against 0.075 s), and a sleep of 3 times left it unfinished.
  std::this_thread::sleep_for(std::chrono::duration<double>(10.0 * blocking + 0.3));
  const auto t1 = Clock::now();
  ok(request->wait(), what + " wait");
  const double waited = seconds_since(t1);
  const comm::CommStats s = comm_.take_stats();
  expect(waited < 0.3 * s.seconds, what,
         "wait() took " + std::to_string(waited) + " s of the operation's " + std::to_string(s.seconds) +
             " s busy (blocking: " + std::to_string(blocking) + " s, " + std::to_string(size) + " floats)");
  // Blocked also holds allreduce_async itself, which a busy machine may preempt: only bounded by busy.
  expect(s.blocked_seconds <= s.seconds, what + ": blocked <= busy",
         "blocked " + std::to_string(s.blocked_seconds) + " s, busy " + std::to_string(s.seconds) + " s");
  equal(t, reference(ReduceOp::Sum, n_, size, torch::kFloat), what);
}

}  // namespace gradsweep::check
