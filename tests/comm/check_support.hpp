#pragma once
// What every section of collective_check shares: the data each rank contributes, the references
// computed locally, and the Checker that records verdicts and compares the counters.
//
// Values are small integers, exact in every dtype (bfloat16 included) and in every order of summation,
// so results are compared bit for bit, whatever algorithm reduced them.
#include "comm/core/host_communicator.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gradsweep::check {

using comm::HostCommunicator;
using sdk::ReduceOp;

// Elements: 8 MiB of float32, run once per collective and algorithm (in float32): large enough for MPI's
// pipelined, segmented algorithms and for several 2 MiB ring segments, small enough that four ranks
// sharing two busy cores finish in seconds. Runs with tiny ring segments (run_ring) use an eighth.
constexpr std::int64_t kLarge = 2 * 1024 * 1024;
// bfloat16's user-defined MPI_Op and the ring's bfloat16 adds over several segments.
constexpr std::int64_t kLarge16 = 256 * 1024;
// Empty, one element (fewer than the ranks), odd (never a multiple of 2 or 4; 1021 is prime, so not of 3).
const std::vector<std::int64_t> kSizes{0, 1, 1021};
const std::vector<torch::ScalarType> kDtypes{torch::kFloat, torch::kDouble, torch::kBFloat16, torch::kHalf,
                                             torch::kInt,   torch::kLong,   torch::kByte};
const std::vector<sdk::Algorithm> kAlgorithms{sdk::Algorithm::Native, sdk::Algorithm::Ring};

// Element i of rank r's tensor: (i mod 13 + 1) * (r + 1), plus 2^33 in int64 so that the upper half
// is exercised too. Sums over 4 ranks stay below 256: exact in bfloat16 and uint8. `first` is the index
// of the first element, for a slice of a longer tensor.
torch::Tensor pattern(std::int64_t n, std::int64_t first = 0);
torch::Tensor fill(int rank, std::int64_t n, torch::ScalarType dtype, std::int64_t first = 0);
// The reduction of fill(r, ...) over ranks r = 0..ranks-1, in closed form: the reference must stay
// cheap next to the collective, or four ranks sharing two cores spend the test computing it.
torch::Tensor reference(ReduceOp op, int ranks, std::int64_t n, torch::ScalarType dtype, std::int64_t first = 0);

const char* op_name(ReduceOp op);
const char* algorithm_name(sdk::Algorithm a);
std::string name(const std::string& call, torch::ScalarType dtype, std::int64_t n, const std::string& extra = "");

class Checker {
 public:
  explicit Checker(HostCommunicator& comm) : comm_(comm), n_(comm.size()), rank_(comm.rank()) {}

  // Sections (one file each: check_collectives.cpp, check_async.cpp, check_async_scatter_gather.cpp,
  // check_point_to_point.cpp).
  void identity();
  void algorithms();
  void allreduce();
  void broadcast();
  void allgather();
  void reduce_scatter();
  void allreduce_async();
  void async_progress();
  void scatter_gather_async();
  void send_recv();
  void recv_any();
  void argument_errors();
  // Every section in turn; prints "DONE rank R of N checks=C failures=F". Returns the exit code.
  int run_all();
  // Only the ring algorithm's sections (for runs with unusual ring tuning).
  int run_ring();
  // Only the hierarchical view's sections, at the full large size (run with GRADSWEEP_RANKS_PER_NODE).
  int run_hierarchical();

 private:
  void expect(bool ok, const std::string& what, const std::string& detail = "");
  bool ok(const sdk::Status& s, const std::string& what);
  void equal(const torch::Tensor& got, const torch::Tensor& want, const std::string& what);
  void error(const sdk::Status& s, const std::string& needle, const std::string& what);
  // The counters since the last call, against the documented convention (docs/communicators.md):
  // bytes each way, calls, S (payload), and blocked time never above busy time.
  void traffic(std::uint64_t sent, std::uint64_t received, std::uint64_t calls, std::uint64_t payload,
               const std::string& what);
  std::uint64_t ring(std::uint64_t bytes, int passes) const { return passes * (n_ - 1) * bytes / n_; }
  sdk::Communicator& with(sdk::Algorithm a);
  // The algorithms the collective sections cover: both, or only one (run_ring, run_hierarchical).
  std::vector<sdk::Algorithm> algorithms_checked() const {
    return only_ ? std::vector<sdk::Algorithm>{*only_} : kAlgorithms;
  }
  int finish(const char* label);

  void allreduce_one(sdk::Algorithm a, torch::ScalarType dtype, std::int64_t size, ReduceOp op);
  void broadcast_one(torch::ScalarType dtype, std::int64_t size, int root);
  void allgather_one(sdk::Algorithm a, torch::ScalarType dtype, std::int64_t size, bool in_place);
  void reduce_scatter_one(sdk::Algorithm a, torch::ScalarType dtype, std::int64_t size, ReduceOp op, bool in_place);
  void allreduce_async_case(sdk::Algorithm a, const std::vector<std::int64_t>& sizes);
  void async_in_order(sdk::Algorithm a);
  void async_beside_blocking(sdk::Algorithm a);
  void async_progress_one(sdk::Algorithm a);
  void reduce_scatter_async_one(sdk::Algorithm a, std::int64_t size, bool in_place);
  void allgather_async_one(sdk::Algorithm a, std::int64_t size, bool in_place);
  void scatter_gather_in_order(sdk::Algorithm a);
  void run_sections(const std::vector<std::pair<const char*, void (Checker::*)()>>& sections);

  HostCommunicator& comm_;
  const int n_, rank_;
  int checks_ = 0, failures_ = 0;
  std::optional<sdk::Algorithm> only_;
  std::int64_t large_ = kLarge;  // what the sections use for kLarge
};

}  // namespace gradsweep::check
