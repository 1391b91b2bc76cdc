// Runs on every rank of an `mpirun -np N` job and checks the MPI backend against references computed
// locally: each rank fills its tensors with rank-dependent values, so every result is known in advance.
// Values are small integers, exact in every dtype (bfloat16 included) and in every order of summation,
// so results are compared bit for bit. comm_test.cpp launches it and reads what it prints:
//
//   collective_check verify        all collectives, dtypes, sizes, byte counters and argument errors;
//                                  prints "FAIL rank R: ..." per failure and "DONE rank R checks=C failures=F"
//   collective_check throw RANK    RANK throws while the others wait in an allreduce: the job must end
//   collective_check hang RANK     RANK never joins an allreduce: the others' watchdog must end the job
#include "comm/host_communicator.hpp"
#include "comm/mpi_runtime.hpp"
#include "services/logging.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>

namespace {

using namespace gradsweep;
using host::HostCommunicator;
using sdk::ReduceOp;

// Elements: 16 MiB of float32, run once per collective (in float32): large enough for MPI's pipelined,
// segmented algorithms, small enough that four ranks sharing two busy cores finish in seconds.
constexpr std::int64_t kLarge = 4 * 1024 * 1024;
// bfloat16's user-defined MPI_Op over several segments.
constexpr std::int64_t kLarge16 = 256 * 1024;
const std::vector<std::int64_t> kSizes{0, 1, 1023};
const std::vector<torch::ScalarType> kDtypes{torch::kFloat, torch::kDouble, torch::kBFloat16,
                                             torch::kHalf,  torch::kInt,    torch::kLong};

// Element i of rank r's tensor: (i mod 13 + 1) * (r + 1), plus 2^33 in int64 so that the upper half
// is exercised too. Sums over 4 ranks stay below 256: exact in bfloat16. `first` is the index of the
// first element, for a slice of a longer tensor.
constexpr std::int64_t kInt64Offset = std::int64_t{1} << 33;

torch::Tensor pattern(std::int64_t n, std::int64_t first = 0) {
  return torch::arange(first, first + n, torch::kLong) % 13 + 1;
}

torch::Tensor fill(int rank, std::int64_t n, torch::ScalarType dtype, std::int64_t first = 0) {
  torch::Tensor t = pattern(n, first) * (rank + 1);
  if (dtype == torch::kLong) t += kInt64Offset;
  return t.to(dtype);
}

// The reduction of fill(r, ...) over ranks r = 0..ranks-1, in closed form: the reference must stay
// cheap next to the collective, or four ranks sharing two cores spend the test computing it.
torch::Tensor reference(ReduceOp op, int ranks, std::int64_t n, torch::ScalarType dtype, std::int64_t first = 0) {
  if (op == ReduceOp::Max) return fill(ranks - 1, n, dtype, first);  // values grow with the rank
  if (op == ReduceOp::Min) return fill(0, n, dtype, first);
  torch::Tensor sum = pattern(n, first) * (ranks * (ranks + 1) / 2);
  if (dtype == torch::kLong) sum += ranks * kInt64Offset;
  return sum.to(dtype);
}

const char* op_name(ReduceOp op) { return op == ReduceOp::Sum ? "sum" : op == ReduceOp::Max ? "max" : "min"; }

std::string name(const char* call, torch::ScalarType dtype, std::int64_t n, const std::string& extra = "") {
  return std::string(call) + "[" + c10::toString(dtype) + " x" + std::to_string(n) + extra + "]";
}

class Checker {
 public:
  explicit Checker(HostCommunicator& comm) : comm_(comm), n_(comm.size()), rank_(comm.rank()) {}

  void expect(bool ok, const std::string& what, const std::string& detail = "") {
    ++checks_;
    if (ok) return;
    ++failures_;
    std::printf("FAIL rank %d: %s%s%s\n", rank_, what.c_str(), detail.empty() ? "" : ": ", detail.c_str());
    std::fflush(stdout);
  }
  bool ok(const sdk::Status& s, const std::string& what) {
    expect(s.ok, what, s.message);
    return s.ok;
  }
  void equal(const torch::Tensor& got, const torch::Tensor& want, const std::string& what) {
    const bool same = got.sizes() == want.sizes() && got.scalar_type() == want.scalar_type() && torch::equal(got, want);
    expect(same, what, same ? "" : "got " + head(got) + " want " + head(want));
  }
  // "[sizes] first, values, ..." on one line.
  static std::string head(const torch::Tensor& t) {
    std::string out = c10::str(t.sizes());
    const torch::Tensor first = t.flatten().slice(0, 0, 4).to(torch::kDouble);
    for (std::int64_t i = 0; i < first.numel(); ++i) out += " " + std::to_string(first[i].item<double>());
    return out;
  }
  void error(const sdk::Status& s, const std::string& needle, const std::string& what) {
    expect(!s.ok && s.message.find(needle) != std::string::npos, what,
           s.ok ? "succeeded, expected an error about '" + needle + "'" : "message was: " + s.message);
  }
  // The counters since the last call, against the documented convention (docs/communicators.md).
  void traffic(std::uint64_t sent, std::uint64_t received, std::uint64_t calls, const std::string& what) {
    const host::CommStats s = comm_.take_stats();
    expect(s.bytes_sent == sent && s.bytes_received == received && s.calls == calls && s.seconds >= 0.0,
           what + " counters",
           "sent " + std::to_string(s.bytes_sent) + " received " + std::to_string(s.bytes_received) + " calls " +
               std::to_string(s.calls) + "; expected " + std::to_string(sent) + " / " + std::to_string(received) +
               " / " + std::to_string(calls));
  }

  std::uint64_t ring(std::uint64_t bytes, int passes) const { return passes * (n_ - 1) * bytes / n_; }

  void allreduce() {
    for (torch::ScalarType dtype : kDtypes)
      for (std::int64_t size : kSizes)
        for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min}) allreduce_one(dtype, size, op);
    allreduce_one(torch::kFloat, kLarge, ReduceOp::Sum);
    allreduce_one(torch::kBFloat16, kLarge16, ReduceOp::Sum);
  }

  void allreduce_one(torch::ScalarType dtype, std::int64_t size, ReduceOp op) {
    const std::string what = name("allreduce", dtype, size, std::string(" ") + op_name(op));
    torch::Tensor t = fill(rank_, size, dtype);
    if (ok(comm_.allreduce(t, op), what)) equal(t, reference(op, n_, size, dtype), what);
    traffic(ring(t.nbytes(), 2), ring(t.nbytes(), 2), 1, what);
  }

  void broadcast() {
    for (int root = 0; root < n_; ++root)
      for (torch::ScalarType dtype : {torch::kFloat, torch::kBFloat16, torch::kLong})
        for (std::int64_t size : kSizes) broadcast_one(dtype, size, root);
    broadcast_one(torch::kFloat, kLarge, n_ - 1);
  }

  void broadcast_one(torch::ScalarType dtype, std::int64_t size, int root) {
    const std::string what = name("broadcast", dtype, size, " root " + std::to_string(root));
    torch::Tensor t = fill(rank_, size, dtype);
    if (ok(comm_.broadcast(t, root), what)) equal(t, fill(root, size, dtype), what);
    // A chain from the root: all but the root receive S, all but the root's left neighbour send S.
    const std::uint64_t s = t.nbytes();
    const bool last = rank_ == (root + n_ - 1) % n_;
    traffic(n_ == 1 || last ? 0 : s, rank_ == root ? 0 : s, 1, what);
  }

  void allgather() {
    for (torch::ScalarType dtype : {torch::kFloat, torch::kBFloat16, torch::kLong})
      for (std::int64_t size : kSizes) {
        allgather_one(dtype, size, false);
        allgather_one(dtype, size, true);
      }
    allgather_one(torch::kFloat, kLarge / n_, false);
  }

  // in_place: the input is this rank's slot of the output, as ZeRO-style strategies lay it out.
  void allgather_one(torch::ScalarType dtype, std::int64_t size, bool in_place) {
    const std::string what = name("allgather", dtype, size, in_place ? " in place" : "");
    torch::Tensor output = torch::full({size * n_}, -1, dtype);
    torch::Tensor input = fill(rank_, size, dtype);
    if (in_place) {
      output.narrow(0, rank_ * size, size).copy_(input);
      input = output.narrow(0, rank_ * size, size);
    }
    std::vector<torch::Tensor> parts;
    for (int r = 0; r < n_; ++r) parts.push_back(fill(r, size, dtype));
    if (ok(comm_.allgather(input, output), what)) equal(output, torch::cat(parts), what);
    traffic(ring(output.nbytes(), 1), ring(output.nbytes(), 1), 1, what);
  }

  void reduce_scatter() {
    for (torch::ScalarType dtype : {torch::kFloat, torch::kBFloat16, torch::kHalf, torch::kLong})
      for (std::int64_t size : kSizes)
        for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) reduce_scatter_one(dtype, size, op);
    reduce_scatter_one(torch::kFloat, kLarge / n_, ReduceOp::Sum);
  }

  void reduce_scatter_one(torch::ScalarType dtype, std::int64_t size, ReduceOp op) {
    const std::string what = name("reduce_scatter", dtype, size, std::string(" ") + op_name(op));
    const torch::Tensor input = fill(rank_, size * n_, dtype);
    torch::Tensor output = torch::full({size}, -1, dtype);
    if (ok(comm_.reduce_scatter(input, output, op), what))
      equal(output, reference(op, n_, size, dtype, rank_ * size), what);
    traffic(ring(input.nbytes(), 1), ring(input.nbytes(), 1), 1, what);
  }

  // Three in flight at once (the second in bfloat16), waited out of order; the second is never waited:
  // destroying its request completes it.
  void allreduce_async() {
    for (std::int64_t size : kSizes) allreduce_async_case({size, size, size});
    allreduce_async_case({kLarge, 1023, 1});
  }

  void allreduce_async_case(const std::vector<std::int64_t>& sizes) {
    const std::string what = name("allreduce_async", torch::kFloat, sizes[0]);
    std::vector<torch::Tensor> tensors;
    std::vector<std::unique_ptr<sdk::Request>> requests(3);
    std::uint64_t bytes = 0;
    for (int i = 0; i < 3; ++i) {
      tensors.push_back(fill(rank_ + i, sizes[i], i == 1 ? torch::kBFloat16 : torch::kFloat));
      ok(comm_.allreduce_async(tensors[i], ReduceOp::Sum, &requests[i]), what + " start");
      bytes += ring(tensors[i].nbytes(), 2);
    }
    for (int i : {2, 0}) ok(requests[i] ? requests[i]->wait() : sdk::Status::Error("no request"), what + " wait");
    requests.clear();
    for (int i = 0; i < 3; ++i) {
      // Rank r sent fill(r + i): the sum over r of (r + i + 1) is n(n+1)/2 + n i.
      const torch::Tensor want = pattern(sizes[i]) * (n_ * (n_ + 1) / 2 + n_ * i);
      equal(tensors[i], want.to(tensors[i].scalar_type()), what + " #" + std::to_string(i));
    }
    traffic(bytes, bytes, 3, what);
  }

  // A ring of exchanges (even ranks send first, odd ranks receive first: never all blocked sending),
  // then two tagged messages received in the opposite order to the one they were sent in.
  void send_recv() {
    if (n_ == 1) {
      torch::Tensor t = fill(0, 4, torch::kFloat);
      error(comm_.send(t, 0, 0), "itself", "send to self");
      comm_.take_stats();
      return;
    }
    const int right = (rank_ + 1) % n_, left = (rank_ + n_ - 1) % n_;
    for (std::int64_t size : {std::int64_t{0}, std::int64_t{1}, std::int64_t{1023}, kLarge}) {
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
      traffic(out.nbytes(), in.nbytes(), 2, what);
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

  // Bad arguments fail on the calling rank with a message and without any MPI traffic. Every rank
  // makes the same mistakes, so no rank is left waiting for another.
  void argument_errors() {
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
    error(comm_.send(t, n_ + 3, 0), "out of range", "send to a rank beyond the job");
    error(comm_.recv(t, -1, 0), "out of range", "recv from rank -1");
    error(comm_.allreduce_async(t, ReduceOp::Sum, nullptr), "request is null", "async without a request");
    traffic(0, 0, 10, "argument errors");
  }

  void identity() {
    expect(std::string(comm_.backend()) == "mpi", "backend is mpi", comm_.backend());
    // One node: every rank shares memory with every other.
    expect(comm_.local_size() == n_ && comm_.local_rank() == rank_, "local rank and size",
           std::to_string(comm_.local_rank()) + " of " + std::to_string(comm_.local_size()));
    ok(comm_.barrier(), "barrier");
    traffic(0, 0, 1, "barrier");
  }

  int run_all() {
    const std::pair<const char*, void (Checker::*)()> sections[] = {
        {"identity", &Checker::identity},   {"allreduce", &Checker::allreduce},
        {"broadcast", &Checker::broadcast}, {"allgather", &Checker::allgather},
        {"reduce_scatter", &Checker::reduce_scatter}, {"allreduce_async", &Checker::allreduce_async},
        {"send_recv", &Checker::send_recv}, {"argument_errors", &Checker::argument_errors}};
    for (const auto& [section, check] : sections) {
      const auto t0 = std::chrono::steady_clock::now();
      (this->*check)();
      if (rank_ == 0)
        std::printf("rank 0: %s %.2f s\n", section,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    ok(comm_.barrier(), "final barrier");
    std::printf("DONE rank %d of %d checks=%d failures=%d\n", rank_, n_, checks_, failures_);
    std::fflush(stdout);
    return failures_ == 0 ? 0 : 1;
  }

 private:
  HostCommunicator& comm_;
  const int n_, rank_;
  int checks_ = 0, failures_ = 0;
};

// What train_command does when a rank fails: log on that rank, then end the job.
[[noreturn]] void fail_job(const std::string& why) {
  spdlog::error("{}", why);
  spdlog::default_logger()->flush();
  host::mpi::abort_job(2);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "verify";
  const int failing = argc > 2 ? std::stoi(argv[2]) : -1;
  torch::set_num_threads(1);
  std::unique_ptr<HostCommunicator> comm;
  try {
    comm = host::make_mpi_communicator();
  } catch (const std::exception& e) {
    std::cerr << "collective_check: " << e.what() << std::endl;
    return 2;
  }
  host::init_logging(comm->rank());
  if (mode == "verify") {
    std::printf("rank %d: %s\n", comm->rank(), host::mpi::thread_level_name(host::mpi::ensure_initialized()).c_str());
    return Checker(*comm).run_all();
  }
  try {
    sdk::check(comm->barrier());
    torch::Tensor t = torch::ones({1024});
    if (comm->rank() == failing) {
      if (mode == "throw") throw std::runtime_error("deliberate failure on rank " + std::to_string(failing));
      std::this_thread::sleep_for(std::chrono::seconds(60));  // "hang": never joins the allreduce
    }
    sdk::check(comm->allreduce(t, ReduceOp::Sum));
    sdk::check(comm->barrier());
    std::printf("rank %d: the job was not ended\n", comm->rank());
    return 0;
  } catch (const std::exception& e) {
    fail_job(e.what());
  }
}
