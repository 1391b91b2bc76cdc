// Sub-communicators of the thread-ranks harness (ABI 1.8: Communicator::split and ::group): which ranks a
// group has and how they are numbered, collectives and messages that stay inside it, async calls beside
// the parent's, bytes counted in the group and in its parent, and the refusals (negative color, no
// kGroups, a group outliving its parent). What the MPI backend's groups must do too.
#include "support/thread_ranks.hpp"
#include "support/text_contains.hpp"

#include "comm/core/host_group.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <mutex>

namespace gradsweep {
namespace {

using test::contains;

using test::run_ranks;
using test::ThreadCommunicator;

test::RanksOptions nodes_of(int ranks_per_node) {
  test::RanksOptions options;
  options.ranks_per_node = ranks_per_node;
  return options;
}

// The ranks' values, gathered over `comm` in its rank order.
std::vector<std::int64_t> gathered_ranks(sdk::Communicator& comm, std::int64_t value) {
  torch::Tensor all = torch::zeros({comm.size()}, torch::kLong);
  sdk::collective::allgather(comm, torch::tensor({value}), all);
  return {all.data_ptr<std::int64_t>(), all.data_ptr<std::int64_t>() + comm.size()};
}

// 2 nodes of 2: node groups {0,1} and {2,3}; across-nodes groups {0,2} and {1,3}.
TEST(ThreadRanksGroups, NodeAndAcrossNodesHoldTheRanksTheyName) {
  std::atomic<int> checked{0};
  run_ranks(
      4,
      [&](sdk::Communicator& comm) {
        const int r = comm.rank();
        auto node = sdk::collective::group(comm, sdk::GroupKind::Node);
        auto across = sdk::collective::group(comm, sdk::GroupKind::AcrossNodes);
        EXPECT_STREQ(node->name(), "node");
        EXPECT_STREQ(across->name(), "across_nodes");
        EXPECT_EQ(node->size(), 2);
        EXPECT_EQ(node->rank(), r % 2);
        EXPECT_EQ(node->local_rank(), r % 2);
        EXPECT_EQ(node->local_size(), 2);
        EXPECT_EQ(across->size(), 2);
        EXPECT_EQ(across->rank(), r / 2);
        EXPECT_EQ(across->local_rank(), 0);  // one rank of the group per node
        EXPECT_EQ(across->local_size(), 1);
        EXPECT_EQ(node->features(), comm.features());
        EXPECT_EQ(gathered_ranks(*node, r),
                  (r < 2 ? std::vector<std::int64_t>{0, 1} : std::vector<std::int64_t>{2, 3}));
        EXPECT_EQ(gathered_ranks(*across, r),
                  (r % 2 == 0 ? std::vector<std::int64_t>{0, 2} : std::vector<std::int64_t>{1, 3}));
        // Reduce inside the node, then across: the whole job's sum, as a hybrid strategy computes it.
        torch::Tensor t = torch::full({3}, static_cast<double>(r + 1));
        sdk::collective::allreduce(*node, t);
        EXPECT_EQ(t[0].item<double>(), r < 2 ? 3.0 : 7.0);
        sdk::collective::allreduce(*across, t);
        EXPECT_EQ(t[0].item<double>(), 10.0);
        ++checked;
      },
      nodes_of(2));
  EXPECT_EQ(checked.load(), 4);
}

// Key orders the group (ties by rank); messages use the group's ranks.
TEST(ThreadRanksGroups, SplitNumbersByKeyAndMessagesUseGroupRanks) {
  run_ranks(5, [](sdk::Communicator& comm) {
    const int r = comm.rank();
    auto g = sdk::collective::split(comm, r % 2, -r);  // evens {4,2,0}, odds {3,1}
    EXPECT_STREQ(g->name(), ("split(" + std::to_string(r % 2) + ")").c_str());
    EXPECT_EQ(gathered_ranks(*g, r),
              (r % 2 == 0 ? std::vector<std::int64_t>{4, 2, 0} : std::vector<std::int64_t>{3, 1}));
    // Equal keys: this communicator's order.
    auto same = sdk::collective::split(comm, 0, 7);
    EXPECT_EQ(same->rank(), r);
    // Group rank 0 sends to group rank 1 with a tag the world also uses: only the group's message matches.
    torch::Tensor t = torch::full({2}, static_cast<float>(r));
    if (g->rank() == 0) sdk::collective::send(*g, t, 1, 9);
    if (g->rank() == 1) {
      sdk::collective::recv(*g, t, 0, 9);
      EXPECT_EQ(t[0].item<float>(), r % 2 == 0 ? 4.0F : 3.0F);
    }
    // A group of a group.
    auto inner = sdk::collective::split(*g, g->rank() == 0 ? 0 : 1, 0);
    EXPECT_EQ(inner->size(), g->rank() == 0 ? 1 : g->size() - 1);
  });
}

// A group's async calls and the parent's blocking ones interleave as on separate communicators.
TEST(ThreadRanksGroups, AsyncCallsInAGroupBesideTheParentsCalls) {
  run_ranks(
      4,
      [](sdk::Communicator& comm) {
        const int r = comm.rank();
        auto node = sdk::collective::group(comm, sdk::GroupKind::Node);
        torch::Tensor gathered = torch::zeros({4});
        auto ag = sdk::collective::allgather_async(*node, torch::full({2}, static_cast<float>(r)), gathered);
        torch::Tensor world = torch::ones({1});
        sdk::collective::allreduce(comm, world);
        torch::Tensor scattered = torch::zeros({1});
        auto rs = sdk::collective::reduce_scatter_async(*node, torch::arange(2).to(torch::kFloat), scattered);
        sdk::collective::wait(rs);
        sdk::collective::wait(ag);
        EXPECT_EQ(world.item<float>(), 4.0F);
        const float first = static_cast<float>(r / 2 * 2);
        EXPECT_TRUE(torch::equal(gathered, torch::tensor({first, first, first + 1, first + 1})));
        EXPECT_EQ(scattered.item<float>(), 2.0F * static_cast<float>(node->rank()));
      },
      nodes_of(2));
}

// Bytes count in the group and in its parent; the split's own exchange counts in neither.
TEST(ThreadRanksGroups, BytesCountInTheGroupAndInItsParent) {
  run_ranks(
      4,
      [](comm::HostCommunicator& comm) {
        auto node = sdk::collective::group(comm, sdk::GroupKind::Node);
        comm::HostCommunicator& counted = dynamic_cast<comm::HostGroup&>(*node).host();
        EXPECT_EQ(comm.take_stats().calls, 0u);
        torch::Tensor t = torch::ones({1000});
        sdk::collective::allreduce(*node, t);
        const comm::CommStats in_group = counted.take_stats();
        EXPECT_EQ(in_group.calls, 1u);
        EXPECT_EQ(in_group.payload_bytes, 4000u);
        EXPECT_EQ(in_group.bytes_sent, 2u * 1u * 4000u / 2u);  // the ring's share on 2 ranks, not 4
        const comm::CommStats in_parent = comm.take_stats();
        EXPECT_EQ(in_parent.calls, 1u);
        EXPECT_EQ(in_parent.bytes_sent, in_group.bytes_sent);
        EXPECT_EQ(in_parent.bytes_received, in_group.bytes_received);
        const comm::GroupStats by_name = comm.take_group_stats();  // the parent's figures, by group
        ASSERT_EQ(by_name.count("node"), 1u);
        EXPECT_EQ(by_name.at("node").bytes_sent, in_group.bytes_sent);
      },
      nodes_of(2));
}

// A negative color is refused on every rank (none is left waiting for it), naming the call and the rank.
TEST(ThreadRanksGroups, ANegativeColorIsRefusedOnEveryRank) {
  std::atomic<int> refused{0};
  run_ranks(3, [&](sdk::Communicator& comm) {
    std::unique_ptr<sdk::Group> g;
    const sdk::Status s = comm.split(comm.rank() == 1 ? -1 : 0, 0, &g);
    EXPECT_FALSE(s.ok);
    EXPECT_EQ(s.message, comm::negative_color_error(-1, 1));
    EXPECT_EQ(g, nullptr);
    refused += s.ok ? 0 : 1;
    sdk::collective::barrier(comm);  // the ranks are still in step
  });
  EXPECT_EQ(refused.load(), 3);
}

TEST(ThreadRanksGroups, ACommunicatorWithoutGroupsRefusesThem) {
  test::RanksOptions options;
  options.features = test::kAllCommFeatures & ~sdk::kGroups;
  run_ranks(
      2,
      [](sdk::Communicator& comm) {
        std::unique_ptr<sdk::Group> g;
        const sdk::Status s = comm.group(sdk::GroupKind::Node, &g);
        EXPECT_FALSE(s.ok);
        EXPECT_TRUE(contains(s.message, "group(node): this communicator does not offer sub-communicators"))
            << s.message;
      },
      options);
}

// A rank failing while the others wait inside a group ends their wait at once, with its message.
TEST(ThreadRanksGroups, AFailureAnywhereEndsAWaitInAGroup) {
  test::RanksOptions options = nodes_of(2);
  options.timeout = std::chrono::seconds(20);  // must not be what ends it
  try {
    run_ranks(
        4,
        [](sdk::Communicator& comm) {
          auto node = sdk::collective::group(comm, sdk::GroupKind::Node);
          if (comm.rank() == 3) throw std::runtime_error("rank 3 broke");
          torch::Tensor t = torch::ones({2});
          sdk::collective::allreduce(*node, t);
        },
        options);
    FAIL() << "run_ranks returned";
  } catch (const test::RankFailure& e) {
    EXPECT_EQ(e.rank(), 3);
    EXPECT_TRUE(contains(e.what(), "rank 3 broke")) << e.what();
  }
}

// A group kept past its parent's life fails by name and touches nothing.
TEST(ThreadRanksGroups, AGroupOutlivingItsParentFailsByName) {
  std::mutex mutex;
  std::vector<std::unique_ptr<sdk::Group>> kept;
  run_ranks(2, [&](sdk::Communicator& comm) {
    auto g = sdk::collective::split(comm, 0, 0);
    const std::lock_guard<std::mutex> lock(mutex);
    kept.push_back(std::move(g));
  });
  for (auto& g : kept) {
    const sdk::Status s = g->barrier();
    EXPECT_FALSE(s.ok);
    EXPECT_TRUE(contains(s.message, "group split(0): its parent communicator was destroyed")) << s.message;
  }
}

// Unequal nodes (3 ranks, 2 per node): the last node's group has one rank.
TEST(ThreadRanksGroups, UnequalNodesGiveUnequalNodeGroups) {
  run_ranks(
      3,
      [](sdk::Communicator& comm) {
        auto node = sdk::collective::group(comm, sdk::GroupKind::Node);
        auto across = sdk::collective::group(comm, sdk::GroupKind::AcrossNodes);
        EXPECT_EQ(node->size(), comm.rank() < 2 ? 2 : 1);
        EXPECT_EQ(across->size(), comm.rank() == 1 ? 1 : 2);
      },
      nodes_of(2));
}

}  // namespace
}  // namespace gradsweep
