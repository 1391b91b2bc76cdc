// collective_check's sections for point-to-point (send, recv, recv_any) and for argument errors.
#include "check_support.hpp"

#include <set>

namespace gradsweep::check {

// A ring of exchanges (even ranks send first, odd ranks receive first: never all blocked sending),
// then two tagged messages received in the opposite order to the one they were sent in.
void Checker::send_recv() {
  if (n_ == 1) {
    torch::Tensor t = fill(0, 4, torch::kFloat);
    error(comm_.send(t, 0, 0), "a one-rank job has no peers", "send to self");  // the stack's check
    comm_.take_stats();
    return;
  }
  const int right = (rank_ + 1) % n_, left = (rank_ + n_ - 1) % n_;
  for (std::int64_t size : {std::int64_t{0}, std::int64_t{1}, std::int64_t{1021}, large_}) {
    const std::string what = name("send/recv", torch::kFloat, size);
    const torch::Tensor out = fill(rank_, size, torch::kFloat);
    torch::Tensor in = torch::full({size}, -1.0f);
    auto do_send = [&] { ok(comm_.send(out, right, 7), what + " send"); };
    auto do_recv = [&] {
      if (ok(comm_.recv(in, left, 7), what + " recv")) equal(in, fill(left, size, torch::kFloat), what);
    };
    if (rank_ % 2 == 0) {
      do_send();
      do_recv();
    } else {
      do_recv();
      do_send();
    }
    traffic(out.nbytes(), in.nbytes(), 2, out.nbytes() + in.nbytes(), what);
  }
  // Small messages (eager: the sends complete without a matching receive) with tags 1 then 2.
  if (rank_ == 0) {
    for (int tag : {1, 2}) ok(comm_.send(fill(tag, 16, torch::kLong), 1, tag), "tagged send");
  } else if (rank_ == 1) {
    for (int tag : {2, 1}) {
      torch::Tensor in = torch::zeros({16}, torch::kLong);
      const std::string what = "tagged recv " + std::to_string(tag);
      if (ok(comm_.recv(in, 0, tag), what)) equal(in, fill(tag, 16, torch::kLong), what);
    }
  }
  comm_.take_stats();
  // A receive that expects more, then one that expects less, than was sent.
  if (rank_ == 0) {
    ok(comm_.send(fill(0, 10, torch::kFloat), 1, 3), "short send");
    ok(comm_.send(fill(0, 10, torch::kFloat), 1, 4), "long send");
  } else if (rank_ == 1) {
    torch::Tensor more = torch::zeros({12});
    error(comm_.recv(more, 0, 3), "sent 10 elements, 12 expected", "recv of a shorter message");
    torch::Tensor fewer = torch::zeros({8});
    error(comm_.recv(fewer, 0, 4), "sent more than the 8 elements", "recv of a longer message");
  }
  ok(comm_.barrier(), "barrier after send/recv");
  comm_.take_stats();
}

// Rank 0 is an inbox: every other rank sends it one message with the same tag, and recv_any takes them
// in whatever order they come, saying who sent each. Then messages of the wrong length.
void Checker::recv_any() {
  torch::Tensor t = torch::zeros({4});
  int source = -7;
  error(comm_.recv_any(t, -1, &source), "tag -1 out of range", "recv_any bad tag");
  error(comm_.recv_any(t, 0, nullptr), "source is null", "recv_any without a source");
  if (n_ == 1) {
    error(comm_.recv_any(t, 0, &source), "no peers", "recv_any on one rank");
    comm_.take_stats();
    return;
  }
  comm_.take_stats();
  const std::int64_t size = 1021;
  if (rank_ == 0) {
    std::set<int> seen;
    for (int i = 1; i < n_; ++i) {
      torch::Tensor in = torch::full({size}, -1, torch::kInt);
      source = -7;
      const std::string what = "recv_any #" + std::to_string(i);
      if (!ok(comm_.recv_any(in, 5, &source), what)) continue;
      expect(source >= 1 && source < n_ && seen.insert(source).second, what + " source",
             "source " + std::to_string(source));
      if (source >= 1 && source < n_) equal(in, fill(source, size, torch::kInt), what + " from its source");
    }
    const std::uint64_t bytes = (n_ - 1) * size * 4;
    traffic(0, bytes, n_ - 1, bytes, "recv_any");
  } else {
    ok(comm_.send(fill(rank_, size, torch::kInt), 0, 5), "send to the inbox");
    traffic(size * 4, 0, 1, size * 4, "send to the inbox");
  }
  // Rank 1 sends 10 elements with tag 6, then 10 with tag 7; rank 0 expects 12, then 8.
  if (rank_ == 1) {
    ok(comm_.send(fill(1, 10, torch::kFloat), 0, 6), "short send to the inbox");
    ok(comm_.send(fill(1, 10, torch::kFloat), 0, 7), "long send to the inbox");
  } else if (rank_ == 0) {
    torch::Tensor more = torch::zeros({12});
    error(comm_.recv_any(more, 6, &source), "rank 1 sent 10 elements, 12 expected", "recv_any of a shorter message");
    torch::Tensor fewer = torch::zeros({8});
    error(comm_.recv_any(fewer, 7, &source), "sent more than the 8 elements", "recv_any of a longer message");
  }
  ok(comm_.barrier(), "barrier after recv_any");
  comm_.take_stats();
}

// Bad arguments fail on the calling rank with a message and without any MPI traffic. Every rank
// makes the same mistakes, so no rank is left waiting for another. The stack's argument checks refuse
// most before anything counts them; the dtypes only the MPI backend knows fail there, a failed call each.
void Checker::argument_errors() {
  torch::Tensor strided = torch::zeros({4, 4}).t();
  error(comm_.allreduce(strided, ReduceOp::Sum), "not contiguous", "non-contiguous allreduce");
  torch::Tensor flags = torch::zeros({4}, torch::kBool);
  error(comm_.allreduce(flags, ReduceOp::Sum), "dtype Bool", "bool allreduce");
  torch::Tensor complex = torch::zeros({4}, torch::kComplexFloat);
  error(comm_.broadcast(complex, 0), "dtype", "complex broadcast");
  torch::Tensor t = torch::zeros({4});
  error(comm_.broadcast(t, n_), "root rank " + std::to_string(n_) + " out of range", "broadcast root");
  torch::Tensor wrong = torch::zeros({4 * n_ + 1});
  error(comm_.allgather(t, wrong), "expected size() x input", "allgather output size");
  error(comm_.reduce_scatter(wrong, t, ReduceOp::Sum), "expected size() x output", "reduce_scatter input size");
  torch::Tensor doubles = torch::zeros({4 * n_}, torch::kDouble);
  error(comm_.allgather(t, doubles), "but output is float64", "allgather dtypes");
  // On one rank the stack refuses any point-to-point first: there is no peer at all.
  const std::string no_peer = n_ == 1 ? "a one-rank job has no peers" : "out of range";
  error(comm_.send(t, n_ + 3, 0), no_peer, "send to a rank beyond the job");
  error(comm_.recv(t, -1, 0), no_peer, "recv from rank -1");
  traffic(0, 0, 2, 0, "argument errors");  // bool and complex: the backend's dtypes
  // The ring view checks the same things, and names itself.
  sdk::Communicator& ring = with(sdk::Algorithm::Ring);
  error(ring.allreduce(strided, ReduceOp::Sum), "ring allreduce: the tensor is not contiguous", "ring non-contiguous");
  error(ring.allreduce(flags, ReduceOp::Sum), "dtype Bool", "ring bool allreduce");
  error(ring.allreduce(t, static_cast<ReduceOp>(9)), "unknown ReduceOp", "ring unknown op");
  error(ring.allgather(t, wrong), "ring allgather: output has", "ring allgather output size");
  error(ring.reduce_scatter(wrong, t, ReduceOp::Sum), "expected size() x output", "ring reduce_scatter input size");
  error(ring.allgather(t, doubles), "but output is float64", "ring allgather dtypes");
  traffic(0, 0, 1, 0, "ring argument errors");  // bool
}

}  // namespace gradsweep::check
