// GradientBuckets (plugins/strategies/common/gradient_buckets.hpp): which parameters share a bucket,
// buckets launched strictly in index order whatever order gradients arrive in, and over thread-ranks a
// bucketed allreduce equal to the reference sum, also when each rank reports gradients in its own order;
// a rank that fails mid-step ends the others' bucket allreduces with its name.
#include "gradient_buckets.hpp"

#include "support/thread_ranks.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <numeric>
#include <random>

namespace gradsweep {
namespace {

using strategies::Bucket;
using strategies::bucket_groups;
using strategies::GradientBuckets;
using Groups = std::vector<std::vector<std::size_t>>;

// Parameters of 10, 20, 30, 40 and 50 elements, gradients set to rank-dependent small integers.
std::vector<torch::Tensor> five_params(int rank) {
  std::vector<torch::Tensor> params;
  for (std::int64_t i = 0; i < 5; ++i) {
    torch::Tensor p = torch::zeros({10 * (i + 1)}).requires_grad_();
    p.mutable_grad() = (torch::arange(p.numel()) % 7 + rank * 3 + i).to(torch::kFloat);
    params.push_back(p);
  }
  return params;
}

// Reverse parameter order; the first bucket capped at 100 bytes, the others at 300.
TEST(GradientBuckets, GroupsFillInReverseOrderUpToTheirCaps) {
  const auto params = five_params(0);
  EXPECT_EQ(bucket_groups(params, 100, 300, 4), (Groups{{4}, {3, 2}, {1, 0}}));
  // 16-bit elements: half the bytes, fewer buckets.
  EXPECT_EQ(bucket_groups(params, 100, 300, 2), (Groups{{4}, {3, 2, 1, 0}}));
  // A parameter larger than any cap has a bucket of its own.
  const std::vector<torch::Tensor> big_first = {torch::zeros({500}), torch::zeros({1})};
  EXPECT_EQ(bucket_groups(big_first, 100, 100, 4), (Groups{{1}, {0}}));
  EXPECT_EQ(bucket_groups(params, 1 << 20, 1 << 20, 4), (Groups{{4, 3, 2, 1, 0}}));
}

TEST(GradientBuckets, BucketsHoldTheirGroupsInTheWireDtype) {
  const auto params = five_params(0);
  GradientBuckets buckets(params, 100, 300, torch::kBFloat16);
  ASSERT_EQ(buckets.buckets().size(), 2u);
  EXPECT_EQ(buckets.buckets()[1].params, (std::vector<std::size_t>{3, 2, 1, 0}));
  EXPECT_EQ(buckets.buckets()[1].buffer.numel(), 40 + 30 + 20 + 10);
  EXPECT_EQ(buckets.buckets()[1].buffer.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(buckets.buckets()[1].layout.offset(1), 40);  // parameter 2 follows parameter 3
}

// A bucket whose gradients are all in waits for the buckets before it, so every rank launches the same
// sequence of collectives whatever order autograd reports gradients in.
TEST(GradientBuckets, LaunchStrictlyInIndexOrder) {
  const auto params = five_params(0);
  GradientBuckets buckets(params, 100, 300, torch::kFloat);  // {4}, {3, 2}, {1, 0}
  std::vector<std::size_t> launched;
  const auto launch = [&](Bucket& b) { launched.push_back(static_cast<std::size_t>(&b - &buckets.buckets()[0])); };
  using Launched = std::vector<std::size_t>;

  buckets.begin_step();  // forward order: the last bucket completes first and must wait
  for (std::size_t i : {0, 1, 2, 3}) buckets.ready(i, launch);
  EXPECT_EQ(launched, Launched{});
  buckets.ready(4, launch);
  EXPECT_EQ(launched, (Launched{0, 1, 2}));

  launched.clear();
  buckets.begin_step();  // backward's order: each bucket launches the moment it completes
  const std::vector<Launched> after = {{0}, {0}, {0, 1}, {0, 1}, {0, 1, 2}};
  for (std::size_t k = 0; k < 5; ++k) {
    buckets.ready(4 - k, launch);
    EXPECT_EQ(launched, after[k]) << "after parameter " << 4 - k;
  }
  EXPECT_THROW(buckets.ready(2, launch), sdk::Error);  // reported twice
}

// Without overlap nothing launches during backward; finish() launches every bucket in order and packs
// the gradients of parameters that never reported.
TEST(GradientBuckets, FinishLaunchesTheRestAndPacksUnreportedGradients) {
  const auto params = five_params(1);
  GradientBuckets buckets(params, 100, 300, torch::kFloat);
  std::vector<std::size_t> launched;
  buckets.begin_step();
  buckets.ready(4, {});
  buckets.ready(0, {});
  buckets.finish([&](Bucket& b) { launched.push_back(static_cast<std::size_t>(&b - &buckets.buckets()[0])); });
  EXPECT_EQ(launched, (std::vector<std::size_t>{0, 1, 2}));
  for (const Bucket& b : buckets.buckets())
    for (std::size_t j = 0; j < b.params.size(); ++j)
      EXPECT_TRUE(torch::equal(b.layout.slice(b.buffer, j), params[b.params[j]].grad())) << "parameter " << b.params[j];
}

// Each rank reports its gradients in an order of its own (autograd's threads race); launched with
// allreduce_async as `ring` does, the harness would refuse mismatched collectives, and every bucket
// ends as the sum over ranks.
void check_bucketed_allreduce(int ranks, sdk::Algorithm algorithm, torch::ScalarType wire) {
  test::run_ranks(ranks, [&](sdk::Communicator& base) {
    sdk::Communicator& comm = sdk::collective::with_algorithm(base, algorithm);
    const auto params = five_params(comm.rank());
    GradientBuckets buckets(params, 100, 300, wire);
    std::vector<std::size_t> order(params.size());
    std::iota(order.begin(), order.end(), 0);
    std::mt19937 shuffle(static_cast<unsigned>(comm.rank() + 1));
    for (int step = 0; step < 3; ++step) {
      std::shuffle(order.begin(), order.end(), shuffle);
      buckets.begin_step();
      const auto launch = [&](Bucket& b) {
        sdk::check(comm.allreduce_async(b.buffer, sdk::ReduceOp::Sum, &b.request));
      };
      for (std::size_t i : order) buckets.ready(i, launch);
      buckets.finish(launch);
      for (const Bucket& b : buckets.buckets())
        for (std::size_t j = 0; j < b.params.size(); ++j) {
          torch::Tensor sum = torch::zeros_like(params[b.params[j]]);
          for (int r = 0; r < ranks; ++r) sum += five_params(r)[b.params[j]].grad();
          EXPECT_TRUE(torch::equal(b.layout.slice(b.buffer, j), sum.to(wire)))
              << "parameter " << b.params[j] << ", step " << step;
        }
    }
  });
}

TEST(GradientBuckets, BucketedAllreduceEqualsTheSumAtOneToFourRanks) {
  for (int ranks = 1; ranks <= 4; ++ranks) check_bucketed_allreduce(ranks, sdk::Algorithm::Native, torch::kFloat);
  check_bucketed_allreduce(3, sdk::Algorithm::Ring, torch::kBFloat16);
}

// Rank 1 fails after launching its first bucket, while the others have launched every bucket and wait
// in finish(): they get an error naming rank 1, and the run reports rank 1's own error. No hang.
TEST(GradientBuckets, ARankFailingMidAllreduceEndsTheOthersWait) {
  const test::RanksOutcome outcome = test::try_ranks(3, [](sdk::Communicator& comm) {
    const auto params = five_params(comm.rank());
    GradientBuckets buckets(params, 100, 300, torch::kFloat);
    buckets.begin_step();
    int launches = 0;
    const auto launch = [&](Bucket& b) {
      if (comm.rank() == 1 && ++launches == 2) throw std::runtime_error("NaN in layer 2");
      sdk::check(comm.allreduce_async(b.buffer, sdk::ReduceOp::Sum, &b.request));
    };
    for (std::size_t i = params.size(); i-- > 0;) buckets.ready(i, launch);
    buckets.finish(launch);
  });
  ASSERT_TRUE(outcome.failure.has_value());
  EXPECT_EQ(outcome.failure->rank, 1);
  EXPECT_EQ(outcome.errors[1], "NaN in layer 2");
  for (std::size_t r : {0u, 2u}) {
    EXPECT_NE(outcome.errors[r].find("allreduce_async of "), std::string::npos) << outcome.errors[r];
    EXPECT_NE(outcome.errors[r].find("rank 1 failed: NaN in layer 2"), std::string::npos) << outcome.errors[r];
  }
}

}  // namespace
}  // namespace gradsweep
