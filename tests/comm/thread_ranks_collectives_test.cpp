// The thread-ranks harness (tests/support/thread_ranks.hpp) against references computed on each rank:
// every collective, blocking and async, native and ring, at 1 to 4 ranks, sizes 0, 1, 7 and 1021, every
// dtype the MPI backend supports and every reduction; point-to-point order and tags; the counters.
#include "support/collective_arithmetic.hpp"
#include "support/thread_ranks.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>

namespace gradsweep {
namespace {

using test::run_ranks;
using test::ThreadCommunicator;

const std::vector<torch::ScalarType> kDtypes = {torch::kFloat, torch::kDouble, torch::kBFloat16, torch::kHalf,
                                                torch::kInt,   torch::kLong,   torch::kByte};
const std::vector<std::int64_t> kSizes = {0, 1, 7, 1021};
const std::vector<sdk::ReduceOp> kOps = {sdk::ReduceOp::Sum, sdk::ReduceOp::Max, sdk::ReduceOp::Min};

// Small non-negative integers that depend on the rank: exact in every dtype, and sums of 4 still are.
torch::Tensor pattern(int rank, std::int64_t n, torch::ScalarType dtype) {
  return ((torch::arange(n, torch::kLong) * 3 + rank * 5) % 11).to(dtype);
}

// Computed in int64 from every rank's pattern, independently of the harness's own arithmetic.
torch::Tensor reference(int ranks, std::int64_t n, torch::ScalarType dtype, sdk::ReduceOp op) {
  std::vector<torch::Tensor> parts;
  for (int r = 0; r < ranks; ++r) parts.push_back(pattern(r, n, torch::kLong));
  const torch::Tensor all = torch::stack(parts);
  switch (op) {
    case sdk::ReduceOp::Sum: return all.sum(0).to(dtype);
    case sdk::ReduceOp::Max: return std::get<0>(all.max(0)).to(dtype);
    case sdk::ReduceOp::Min: return std::get<0>(all.min(0)).to(dtype);
  }
  return {};
}

std::string label(int ranks, torch::ScalarType dtype, std::int64_t n, sdk::ReduceOp op) {
  return std::to_string(ranks) + " ranks, " + c10::toString(dtype) + ", " + std::to_string(n) + " elements, op " +
         std::to_string(static_cast<int>(op));
}

// Every blocking collective of `comm` (the communicator or a view of it) against the references.
void check_blocking(sdk::Communicator& comm) {
  const int n_ranks = comm.size(), rank = comm.rank();
  for (torch::ScalarType dtype : kDtypes)
    for (std::int64_t n : kSizes) {
      for (sdk::ReduceOp op : kOps) {
        const std::string where = label(n_ranks, dtype, n, op);
        torch::Tensor t = pattern(rank, n, dtype);
        ASSERT_TRUE(comm.allreduce(t, op).ok) << where;
        EXPECT_TRUE(torch::equal(t, reference(n_ranks, n, dtype, op))) << "allreduce, " << where;

        torch::Tensor in = pattern(rank, n * n_ranks, dtype);
        torch::Tensor out = torch::full({n}, 99, dtype);
        ASSERT_TRUE(comm.reduce_scatter(in, out, op).ok) << where;
        EXPECT_TRUE(torch::equal(out, reference(n_ranks, n * n_ranks, dtype, op).narrow(0, rank * n, n)))
            << "reduce_scatter, " << where;
      }
      torch::Tensor gathered = torch::zeros({n * n_ranks}, dtype);
      ASSERT_TRUE(comm.allgather(pattern(rank, n, dtype), gathered).ok);
      for (int r = 0; r < n_ranks; ++r)
        EXPECT_TRUE(torch::equal(gathered.narrow(0, r * n, n), pattern(r, n, dtype))) << "allgather";
      for (int root = 0; root < n_ranks; ++root) {
        torch::Tensor t = pattern(rank, n, dtype);
        ASSERT_TRUE(comm.broadcast(t, root).ok);
        EXPECT_TRUE(torch::equal(t, pattern(root, n, dtype))) << "broadcast from " << root;
      }
    }
}

TEST(ThreadRanks, CollectivesEqualReferencesAtOneToFourRanks) {
  for (int ranks = 1; ranks <= 4; ++ranks) run_ranks(ranks, [](sdk::Communicator& comm) { check_blocking(comm); });
}

TEST(ThreadRanks, RingAndHierarchicalViewsComputeTheSame) {
  test::RanksOptions two_nodes;
  two_nodes.ranks_per_node = 2;
  run_ranks(
      4,
      [](sdk::Communicator& comm) {
        check_blocking(sdk::collective::with_algorithm(comm, sdk::Algorithm::Ring));
        check_blocking(sdk::collective::with_algorithm(comm, sdk::Algorithm::Hierarchical));
      },
      two_nodes);
}

// ZeRO's layout: each rank's input is its own slot of the output (allgather), or the output lies inside
// the input (reduce_scatter); the result is as if input had been copied first.
TEST(ThreadRanks, AliasedLayoutsBehaveAsCopies) {
  run_ranks(3, [](sdk::Communicator& comm) {
    const int r = comm.rank();
    torch::Tensor full = torch::zeros({15});
    full.narrow(0, r * 5, 5).copy_(pattern(r, 5, torch::kFloat));
    sdk::collective::allgather(comm, full.narrow(0, r * 5, 5), full);
    for (int k = 0; k < 3; ++k) EXPECT_TRUE(torch::equal(full.narrow(0, k * 5, 5), pattern(k, 5, torch::kFloat)));

    torch::Tensor grads = pattern(r, 15, torch::kFloat);
    torch::Tensor shard = grads.narrow(0, r * 5, 5);
    sdk::collective::reduce_scatter(comm, grads, shard);
    EXPECT_TRUE(torch::equal(shard, reference(3, 15, torch::kFloat, sdk::ReduceOp::Sum).narrow(0, r * 5, 5)));
  });
}

// Several async calls in flight, waited out of order, with a blocking call between them: async calls
// match each other by issue order, blocking calls each other, as on the MPI backend.
TEST(ThreadRanks, AsyncCallsMatchInIssueOrderBesideBlockingCalls) {
  for (int ranks = 1; ranks <= 4; ++ranks)
    run_ranks(ranks, [ranks](sdk::Communicator& comm) {
      const int r = comm.rank();
      sdk::Communicator& ring = sdk::collective::with_algorithm(comm, sdk::Algorithm::Ring);
      torch::Tensor a = pattern(r, 1021, torch::kFloat);
      torch::Tensor b = pattern(r, 7, torch::kBFloat16);
      torch::Tensor rs_out = torch::zeros({4});
      torch::Tensor ag_out = torch::zeros({3 * ranks}, torch::kLong);
      auto ra = sdk::collective::allreduce_async(comm, a);
      auto rs =
          sdk::collective::reduce_scatter_async(ring, pattern(r, 4 * ranks, torch::kFloat), rs_out, sdk::ReduceOp::Max);
      torch::Tensor blocking = pattern(r, 5, torch::kInt);
      sdk::collective::allreduce(comm, blocking, sdk::ReduceOp::Min);
      auto ag = sdk::collective::allgather_async(comm, pattern(r, 3, torch::kLong), ag_out);
      auto rb = sdk::collective::allreduce_async(ring, b);
      sdk::collective::wait(rb);
      sdk::collective::wait(ag);
      sdk::collective::wait(rs);
      sdk::collective::wait(ra);
      EXPECT_TRUE(torch::equal(a, reference(ranks, 1021, torch::kFloat, sdk::ReduceOp::Sum)));
      EXPECT_TRUE(torch::equal(b, reference(ranks, 7, torch::kBFloat16, sdk::ReduceOp::Sum)));
      EXPECT_TRUE(torch::equal(blocking, reference(ranks, 5, torch::kInt, sdk::ReduceOp::Min)));
      const torch::Tensor maxima = reference(ranks, 4 * ranks, torch::kFloat, sdk::ReduceOp::Max);
      EXPECT_TRUE(torch::equal(rs_out, maxima.narrow(0, 4 * r, 4)));
      for (int k = 0; k < ranks; ++k)
        EXPECT_TRUE(torch::equal(ag_out.narrow(0, 3 * k, 3), pattern(k, 3, torch::kLong)));
    });
}

// A 16-bit sum rounds after every addition in rank order, like the MPI backend's bfloat16 reduction.
TEST(ThreadRanks, SixteenBitSumsRoundPairwiseInRankOrder) {
  run_ranks(3, [](sdk::Communicator& comm) {
    const std::vector<float> values = {256.0f, 1.0f, 1.0f};  // 256 + 1 rounds back to 256 in bfloat16
    torch::Tensor t = torch::full({2}, values[static_cast<std::size_t>(comm.rank())], torch::kBFloat16);
    sdk::collective::allreduce(comm, t);
    EXPECT_EQ(t[0].item<float>(), 256.0f);
    std::vector<torch::Tensor> parts;
    for (float v : values) parts.push_back(torch::full({2}, v, torch::kBFloat16));
    EXPECT_TRUE(torch::equal(t, test::reduce_in_rank_order(parts, sdk::ReduceOp::Sum)));
  });
}

// Messages from one sender with one tag arrive in order; a receive by tag takes the first with that tag.
TEST(ThreadRanks, SendAndRecvMatchBySourceAndTagInOrder) {
  run_ranks(3, [](sdk::Communicator& comm) {
    if (comm.rank() == 0) {
      for (int k = 0; k < 3; ++k) ASSERT_TRUE(comm.send(torch::full({4}, static_cast<float>(k)), 2, 7).ok);
      ASSERT_TRUE(comm.send(torch::full({2}, 42.0, torch::kDouble), 2, 8).ok);
    } else if (comm.rank() == 1) {
      ASSERT_TRUE(comm.send(torch::full({4}, 100.0f), 2, 7).ok);
    } else {
      torch::Tensor d = torch::zeros({2}, torch::kDouble);
      ASSERT_TRUE(comm.recv(d, 0, 8).ok);  // tag 8 was sent last, taken first
      EXPECT_EQ(d[1].item<double>(), 42.0);
      torch::Tensor t = torch::zeros({4});
      ASSERT_TRUE(comm.recv(t, 1, 7).ok);
      EXPECT_EQ(t[0].item<float>(), 100.0f);
      for (int k = 0; k < 3; ++k) {
        ASSERT_TRUE(comm.recv(t, 0, 7).ok);
        EXPECT_EQ(t[3].item<float>(), static_cast<float>(k));
      }
    }
  });
}

// A parameter server's inbox: rank 0 takes one message from every other rank, whichever comes first,
// answers each on another tag, and every worker gets its own answer.
TEST(ThreadRanks, RecvAnyCollectsFromEveryRankAndSaysWhich) {
  for (int ranks = 2; ranks <= 4; ++ranks)
    run_ranks(ranks, [ranks](sdk::Communicator& comm) {
      constexpr int kPush = 1, kPull = 2;
      if (comm.rank() == 0) {
        std::vector<int> seen(static_cast<std::size_t>(ranks), 0);
        for (int k = 1; k < ranks; ++k) {
          torch::Tensor t = torch::zeros({3});
          int source = -1;
          ASSERT_TRUE(comm.recv_any(t, kPush, &source).ok);
          ASSERT_GT(source, 0);
          EXPECT_EQ(t[0].item<float>(), static_cast<float>(source * 10));
          ++seen[static_cast<std::size_t>(source)];
          torch::Tensor reply = t * 2;
          ASSERT_TRUE(comm.send(reply, source, kPull).ok);
        }
        for (int k = 1; k < ranks; ++k) EXPECT_EQ(seen[static_cast<std::size_t>(k)], 1) << "rank " << k;
      } else {
        ASSERT_TRUE(comm.send(torch::full({3}, comm.rank() * 10.0f), 0, kPush).ok);
        torch::Tensor reply = torch::zeros({3});
        ASSERT_TRUE(comm.recv(reply, 0, kPull).ok);
        EXPECT_EQ(reply[2].item<float>(), static_cast<float>(comm.rank() * 20));
      }
    });
}

// The counters follow comm/core/byte_counting.hpp, as the MPI backend's do.
TEST(ThreadRanks, CountsBytesAsTheRingWouldMoveThem) {
  run_ranks(4, [](comm::HostCommunicator& comm) {
    torch::Tensor t = torch::ones({1000});  // S = 4000 bytes
    sdk::collective::allreduce(comm, t);
    comm::CommStats s = comm.take_stats();
    EXPECT_EQ(s.calls, 1u);
    EXPECT_EQ(s.payload_bytes, 4000u);
    EXPECT_EQ(s.bytes_sent, 2u * 3u * 4000u / 4u);
    EXPECT_EQ(s.bytes_received, s.bytes_sent);
    EXPECT_LE(s.blocked_seconds, s.seconds);

    torch::Tensor gathered = torch::zeros({4000});
    auto request = sdk::collective::allgather_async(comm, t, gathered);
    sdk::collective::wait(request);
    s = comm.take_stats();
    EXPECT_EQ(s.calls, 1u);
    EXPECT_EQ(s.payload_bytes, 16000u);
    EXPECT_EQ(s.bytes_sent, 3u * 16000u / 4u);

    if (comm.rank() == 1) {
      ASSERT_TRUE(comm.send(t, 0, 3).ok);
    }
    if (comm.rank() == 0) {
      ASSERT_TRUE(comm.recv(t, 1, 3).ok);
    }
    s = comm.take_stats();
    EXPECT_EQ(s.bytes_sent, comm.rank() == 1 ? 4000u : 0u);
    EXPECT_EQ(s.bytes_received, comm.rank() == 0 ? 4000u : 0u);
  });
}

TEST(ThreadRanks, NodesAndFeaturesAreAsConfigured) {
  test::RanksOptions options;
  options.ranks_per_node = 2;
  options.features = sdk::kPointToPoint | sdk::kAsyncCollectives;  // what NCCL offers
  std::atomic<int> checked{0};
  run_ranks(
      3,
      [&](sdk::Communicator& comm) {
        EXPECT_EQ(comm.local_rank(), comm.rank() % 2);
        EXPECT_EQ(comm.local_size(), comm.rank() < 2 ? 2 : 1);
        EXPECT_STREQ(comm.backend(), "threads");
        EXPECT_EQ(comm.features(), options.features);
        torch::Tensor t = torch::zeros({1});
        int source = -1;
        const sdk::Status any = comm.recv_any(t, 0, &source);
        EXPECT_FALSE(any.ok);
        EXPECT_NE(any.message.find("does not offer recv_any"), std::string::npos) << any.message;
        sdk::Communicator* view = nullptr;
        EXPECT_FALSE(comm.with_algorithm(sdk::Algorithm::Ring, &view).ok);
        ++checked;
      },
      options);
  EXPECT_EQ(checked.load(), 3);
}

}  // namespace
}  // namespace gradsweep
