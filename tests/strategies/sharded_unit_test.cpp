// ShardedUnit (plugins/strategies/common/sharded_unit.hpp), the model unit of fsdp and hsdp, over
// thread-ranks as 2 nodes of 2: sharded over the node group, a prefetch (allgather_async) gives the same
// parameters as a blocking gather, release waits for a prefetch in flight, and the node's reduce-scatter
// followed by the across-nodes allreduce (hsdp's gradient path) sums every rank's gradient into the shard.
#include "sharded_unit.hpp"

#include "support/thread_ranks.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace gradsweep {
namespace {

using strategies::ShardedUnit;

// Two parameters of 7 and 6 elements (13: padded to 14 over 2 ranks), equal on every rank.
std::vector<torch::Tensor> unit_params() {
  return {(torch::arange(7).to(torch::kFloat) * 0.5).view({7}).requires_grad_(),
          (torch::arange(6).to(torch::kFloat) - 3).view({2, 3}).requires_grad_()};
}

test::RanksOptions two_nodes_of_two() {
  test::RanksOptions options;
  options.ranks_per_node = 2;
  return options;
}

TEST(ShardedUnit, APrefetchGathersWhatABlockingGatherDoes) {
  test::run_ranks(
      4,
      [](sdk::Communicator& comm) {
        auto node = sdk::collective::group(comm, sdk::GroupKind::Node);
        std::vector<torch::Tensor> params = unit_params();
        const std::vector<torch::Tensor> expected = unit_params();
        ShardedUnit unit("block", params, {0, 1}, node->rank(), node->size());
        EXPECT_FALSE(unit.gathered());
        EXPECT_EQ(unit.shard_bytes(), 7 * 4);
        EXPECT_EQ(unit.full_bytes(), 14 * 4);

        unit.prefetch(*node);
        EXPECT_TRUE(unit.gathered());
        EXPECT_TRUE(unit.in_flight());
        unit.gather(*node);  // waits
        EXPECT_FALSE(unit.in_flight());
        for (std::size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(torch::equal(params[i], expected[i])) << i;
        unit.release();

        unit.gather(*node);  // blocking
        for (std::size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(torch::equal(params[i], expected[i])) << i;
        unit.release();

        unit.prefetch(*node);  // released unused: the release waits for it
        unit.release();
        EXPECT_FALSE(unit.gathered());
      },
      two_nodes_of_two());
}

TEST(ShardedUnit, NodeReduceScatterThenAcrossNodesAllreduceSumsEveryRank) {
  test::run_ranks(
      4,
      [](sdk::Communicator& comm) {
        auto node = sdk::collective::group(comm, sdk::GroupKind::Node);
        auto across = sdk::collective::group(comm, sdk::GroupKind::AcrossNodes);
        std::vector<torch::Tensor> params = unit_params();
        ShardedUnit unit("block", params, {0, 1}, node->rank(), node->size());
        unit.gather(*node);
        // Rank r's gradient: (r + 1) everywhere, so the sum over the 4 ranks is 10.
        for (auto& p : params) p.mutable_grad() = torch::full_like(p, static_cast<float>(comm.rank() + 1));
        unit.gradient_shard().zero_();
        unit.reduce_gradients(*node);
        for (const auto& p : params) EXPECT_FALSE(p.grad().defined());  // the full gradients are dropped
        const float node_sum = comm.rank() < 2 ? 3.0F : 7.0F;
        // The shard's last element on node rank 1 is padding: no gradient there.
        const std::int64_t real = node->rank() == 0 ? 7 : 6;
        EXPECT_TRUE(torch::equal(unit.gradient_shard().narrow(0, 0, real), torch::full({real}, node_sum)));
        auto request = sdk::collective::allreduce_async(*across, unit.gradient_shard());
        sdk::collective::wait(request);
        EXPECT_TRUE(torch::equal(unit.gradient_shard().narrow(0, 0, real), torch::full({real}, 10.0F)));
        unit.release();
      },
      two_nodes_of_two());
}

}  // namespace
}  // namespace gradsweep
