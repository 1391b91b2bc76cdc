// collective_check's sub-communicator sections (sdk::Communicator::split and ::group on the MPI backend),
// run on 4 ranks with GRADSWEEP_RANKS_PER_NODE=2, i.e. "nodes" {0,1} and {2,3}:
//
//   collective_check groups          every check below; "FAIL rank R: ..." per failure, then
//                                    "DONE rank R of N groups checks=C failures=F"
//   collective_check group-hang RANK DIR   RANK never joins an allreduce of its split(rank % 2) group: the
//                                    group's watchdog must end the job naming the group
//
// Each rank contributes rank + 1 (its rank in the job), so every group's sum is known in advance.
#include "check_groups.hpp"

#include "comm/core/byte_counting.hpp"
#include "comm/registry/backend_registry.hpp"
#include "comm/forensics/collective_forensics.hpp"
#include "comm/core/host_group.hpp"

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace gradsweep::check {

using comm::HostCommunicator;
namespace {

constexpr std::int64_t kElements = 1000;  // 4000 bytes of float32

class GroupChecks {
 public:
  explicit GroupChecks(HostCommunicator& world) : world_(world), rank_(world.rank()) {}

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
  void error(const sdk::Status& s, const std::string& needle, const std::string& what) {
    expect(!s.ok && s.message.find(needle) != std::string::npos, what,
           s.ok ? "succeeded" : "message: " + s.message + " (wanted: " + needle + ")");
  }

  // The sum of rank + 1 over the job ranks `members` (each contributes a tensor of that value).
  void sums(sdk::Communicator& g, const std::vector<int>& members, const std::string& what) {
    float want = 0;
    for (const int r : members) want += static_cast<float>(r + 1);
    torch::Tensor t = torch::full({kElements}, static_cast<float>(rank_ + 1));
    if (ok(g.allreduce(t, sdk::ReduceOp::Sum), what + " allreduce"))
      expect(t.eq(want).all().item<bool>(), what + " allreduce", "got " + std::to_string(t[0].item<float>()));
    torch::Tensor a = torch::full({kElements}, static_cast<float>(rank_ + 1));
    std::unique_ptr<sdk::Request> request;
    if (ok(g.allreduce_async(a, sdk::ReduceOp::Sum, &request), what + " allreduce_async") &&
        ok(request->wait(), what + " allreduce_async wait"))
      expect(a.eq(want).all().item<bool>(), what + " allreduce_async");
    torch::Tensor r = torch::full({kElements}, static_cast<float>(rank_ + 1));
    if (ok(sdk::collective::with_algorithm(g, sdk::Algorithm::Ring).allreduce(r, sdk::ReduceOp::Sum),
           what + " ring allreduce"))
      expect(r.eq(want).all().item<bool>(), what + " ring allreduce");
  }

  void shape(sdk::Group& g, const std::string& name, int size, int rank, const std::string& what) {
    expect(g.name() == name, what + " name", g.name());
    expect(g.size() == size, what + " size", std::to_string(g.size()));
    expect(g.rank() == rank, what + " rank", std::to_string(g.rank()));
    expect(std::string(g.backend()) == "mpi", what + " backend", g.backend());
  }

  void parity() {
    world_.take_stats();
    std::unique_ptr<sdk::Group> g;
    if (!ok(world_.split(rank_ % 2, rank_, &g), "split by parity")) return;
    const std::string name = "split(" + std::to_string(rank_ % 2) + ")";
    shape(*g, name, 2, rank_ / 2, "split by parity");
    sums(*g, {rank_ % 2, rank_ % 2 + 2}, "split by parity");
    // Three calls of 4000 bytes on 2 ranks: each counts 2(n-1)/n * S = 4000 bytes each way.
    const std::uint64_t each = 3 * comm::allreduce_traffic(kElements * 4, 2).sent;
    const comm::CommStats mine = dynamic_cast<comm::HostGroup&>(*g).host().take_stats();
    expect(mine.bytes_sent == each && mine.bytes_received == each && mine.calls == 3, "group's own counters",
           std::to_string(mine.bytes_sent) + " sent, " + std::to_string(mine.calls) + " calls");
    const comm::CommStats parent = world_.take_stats();
    expect(parent.bytes_sent == each && parent.bytes_received == each && parent.calls == 3,
           "the parent's totals include the group's", std::to_string(parent.bytes_sent) + " sent");
    const comm::GroupStats groups = world_.take_group_stats();
    const auto it = groups.find(name);
    expect(groups.size() == 1 && it != groups.end() && it->second.bytes_sent == each && it->second.calls == 3,
           "the parent's figures under the group's name");
    expect(world_.take_group_stats().empty(), "group figures are taken once");
  }

  void nodes() {
    std::unique_ptr<sdk::Group> node, across;
    if (ok(world_.group(sdk::GroupKind::Node, &node), "group(Node)")) {
      shape(*node, "node", 2, rank_ % 2, "group(Node)");
      expect(node->local_size() == 2 && node->local_rank() == rank_ % 2, "group(Node) local rank and size");
      sums(*node, {rank_ / 2 * 2, rank_ / 2 * 2 + 1}, "group(Node)");
    }
    if (ok(world_.group(sdk::GroupKind::AcrossNodes, &across), "group(AcrossNodes)")) {
      shape(*across, "across_nodes", 2, rank_ / 2, "group(AcrossNodes)");
      expect(across->local_size() == 1 && across->local_rank() == 0, "group(AcrossNodes): one rank per node");
      sums(*across, {rank_ % 2, rank_ % 2 + 2}, "group(AcrossNodes)");
      // A group of a group: the node's ranks within across_nodes are this rank alone.
      std::unique_ptr<sdk::Group> inner;
      if (ok(across->group(sdk::GroupKind::Node, &inner), "group(Node) of across_nodes"))
        shape(*inner, "node", 1, 0, "group(Node) of across_nodes");
    }
    world_.take_stats();
    const comm::GroupStats groups = world_.take_group_stats();
    expect(groups.count("node") == 1 && groups.count("across_nodes") == 1, "both groups counted by name");
  }

  void negative_color() {
    std::unique_ptr<sdk::Group> g;
    error(world_.split(rank_ == 0 ? -1 : 0, 0, &g), "split: color -1 on rank 0", "a negative color is refused");
    error(world_.split(rank_ == 0 ? -1 : 0, 0, &g), "every rank must be in a group", "... saying why");
    expect(g == nullptr, "no group after a refused split");
  }

  void parent_destroyed() {
    std::unique_ptr<HostCommunicator> parent = comm::make_communicator("mpi");
    std::unique_ptr<sdk::Group> g;
    if (!ok(parent->split(0, rank_, &g), "split of a second communicator")) return;
    parent.reset();
    torch::Tensor t = torch::ones({4});
    error(g->allreduce(t, sdk::ReduceOp::Sum), "group split(0): its parent communicator was destroyed",
          "a group used after its parent is gone");
    std::unique_ptr<sdk::Request> request;
    error(g->allreduce_async(t, sdk::ReduceOp::Sum, &request), "its parent communicator was destroyed",
          "async on a group whose parent is gone");
    sdk::Communicator* view = nullptr;
    error(g->with_algorithm(sdk::Algorithm::Ring, &view), "its parent communicator was destroyed",
          "with_algorithm on a group whose parent is gone");
    std::unique_ptr<sdk::Group> inner;
    error(g->split(0, 0, &inner), "its parent communicator was destroyed", "split of a group whose parent is gone");
  }

  int finish() {
    std::printf("DONE rank %d of %d groups checks=%d failures=%d\n", rank_, world_.size(), checks_, failures_);
    std::fflush(stdout);
    return failures_ == 0 ? 0 : 1;
  }

 private:
  HostCommunicator& world_;
  const int rank_;
  int checks_ = 0, failures_ = 0;
};

}  // namespace

int run_groups(HostCommunicator& world) {
  GroupChecks checks(world);
  checks.parity();
  checks.nodes();
  checks.negative_color();
  checks.parent_destroyed();
  return checks.finish();
}

int group_hang(HostCommunicator& world, int failing, const std::string& dumps) {
  if (!dumps.empty()) comm::forensics::set_directory(dumps, world.rank());
  std::unique_ptr<sdk::Group> g = sdk::collective::split(world, world.rank() % 2, world.rank());
  sdk::check(g->barrier());  // the group's collective #1
  torch::Tensor t = torch::ones({1024});
  if (world.rank() == failing) std::this_thread::sleep_for(std::chrono::seconds(60));
  sdk::check(g->allreduce(t, sdk::ReduceOp::Sum));  // #2: its partner waits here
  std::printf("rank %d: the job was not ended\n", world.rank());
  return 0;
}

}  // namespace gradsweep::check
