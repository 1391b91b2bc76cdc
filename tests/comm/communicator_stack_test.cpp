// The communicator stack's layers (comm/layers/communicator_stack.hpp) over the thread-ranks backend: argument
// checks that refuse a call before anything is sent, counters that stay the backend's through every layer,
// groups and views, and the hang layer naming a stuck call by rank, collective and sequence number. Then
// the same hang question on the local backend (one rank: a collective cannot hang, a receive has no peer).
#include "comm/registry/backend_registry.hpp"
#include "comm/layers/communicator_stack.hpp"
#include "comm/core/host_group.hpp"
#include "support/thread_ranks.hpp"
#include "support/text_contains.hpp"
#include "comm/hang_reports.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <mutex>
#include <thread>

namespace gradsweep {
namespace {

using test::contains;

using test::run_ranks;

// A bad call fails on its rank with the call's name, and nothing of it reaches the backend: no call is
// counted, no collective is joined (the ranks' next collective still pairs with the other's).
TEST(CommunicatorStack, ArgumentErrorIsNamedBeforeAnythingIsSent) {
  run_ranks(2, [](comm::HostCommunicator& comm) {
    torch::Tensor in = torch::ones({4});
    torch::Tensor wrong = torch::zeros({7});
    const sdk::Status s = comm.allgather(in, wrong);
    EXPECT_FALSE(s.ok);
    EXPECT_TRUE(contains(s.message, "allgather: output has 7 elements; expected size() x input = 2 x 4")) << s.message;
    torch::Tensor half = torch::ones({4}, torch::kHalf);
    torch::Tensor out = torch::zeros({8});
    EXPECT_TRUE(contains(comm.allgather(half, out).message, "allgather: input is float16 but output is float32"));
    EXPECT_TRUE(contains(comm.send(in, 1 - comm.rank(), -3).message, "send: tag -3 out of range"));
    EXPECT_TRUE(contains(comm.recv(in, 2, 0).message, "recv: source rank 2 out of range (2 ranks)"));
    EXPECT_TRUE(contains(comm.allreduce(in, static_cast<sdk::ReduceOp>(7)).message, "allreduce: unknown ReduceOp 7"));
    EXPECT_EQ(comm.take_stats().calls, 0u) << "a refused call reached the backend";
    sdk::collective::barrier(comm);  // pairs only if neither rank joined anything above
    EXPECT_EQ(comm.take_stats().calls, 1u);
  });
}

// A feature the backend lacks is refused by the layer in its words, for views and async calls too.
TEST(CommunicatorStack, MissingFeaturesAreRefusedByName) {
  test::RanksOptions options;
  options.features = sdk::kPointToPoint;
  run_ranks(
      2,
      [](comm::HostCommunicator& comm) {
        torch::Tensor t = torch::ones({2});
        int source = -1;
        EXPECT_TRUE(contains(comm.recv_any(t, 0, &source).message, "recv_any: this communicator does not offer"));
        std::unique_ptr<sdk::Request> request;
        EXPECT_TRUE(contains(comm.allreduce_async(t, sdk::ReduceOp::Sum, &request).message,
                             "allreduce_async: this communicator does not offer"));
        sdk::Communicator* view = nullptr;
        EXPECT_TRUE(contains(comm.with_algorithm(sdk::Algorithm::Ring, &view).message,
                             "with_algorithm(ring): this communicator"));
      },
      options);
}

// The counters are the backend's through the layers: the ring convention's bytes for an allreduce, a
// view's calls in the same totals, and a group's traffic in its own and under its name in the parent's.
TEST(CommunicatorStack, CountersSurviveTheLayersViewsAndGroups) {
  test::RanksOptions options;
  options.ranks_per_node = 2;
  run_ranks(
      4,
      [](comm::HostCommunicator& comm) {
        torch::Tensor t = torch::ones({1000});
        sdk::collective::allreduce(comm, t);
        comm::CommStats stats = comm.take_stats();
        EXPECT_EQ(stats.bytes_sent, 6000u);  // 2 (n-1)/n S, S = 4000 bytes, n = 4
        EXPECT_EQ(stats.payload_bytes, 4000u);
        EXPECT_EQ(stats.calls, 1u);

        sdk::Communicator& ring = sdk::collective::with_algorithm(comm, sdk::Algorithm::Ring);
        EXPECT_EQ(&ring, &sdk::collective::with_algorithm(comm, sdk::Algorithm::Ring)) << "one view per algorithm";
        torch::Tensor strided = torch::ones({4, 4}).t();
        EXPECT_TRUE(contains(ring.allreduce(strided, sdk::ReduceOp::Sum).message,
                             "ring allreduce: the tensor is not contiguous"));
        sdk::collective::allreduce(ring, t);
        EXPECT_EQ(comm.take_stats().bytes_sent, 6000u);

        std::unique_ptr<sdk::Group> node = sdk::collective::group(comm, sdk::GroupKind::Node);
        EXPECT_STREQ(node->name(), "node");
        torch::Tensor g = torch::ones({100});
        sdk::collective::allreduce(*node, g);  // 2 ranks: 2 (1/2) 400 = 400 bytes each way
        EXPECT_EQ(dynamic_cast<comm::HostGroup&>(*node).host().take_stats().bytes_sent, 400u);
        const comm::CommStats parent = comm.take_stats();
        EXPECT_EQ(parent.bytes_sent, 400u);
        EXPECT_EQ(comm.take_group_stats()["node"].bytes_sent, 400u);
        torch::Tensor empty;
        EXPECT_TRUE(contains(node->allreduce(empty, sdk::ReduceOp::Sum).message, "allreduce: the tensor is undefined"))
            << "a group's calls pass the argument checks too";
      },
      options);
}

// Rank 1 is late to the third collective: rank 0's call is reported by rank, collective and number while
// it waits, then completes when rank 1 joins. Async calls are watched until their request completes.
TEST(CommunicatorStack, AHungCollectiveIsNamedByRankCollectiveAndSequenceNumber) {
  test::HangReports hangs;
  const test::RanksOptions options = hangs.watched(0.2);
  run_ranks(
      2,
      [](comm::HostCommunicator& comm) {
        sdk::collective::barrier(comm);  // #1
        torch::Tensor t = torch::ones({4});
        sdk::collective::allreduce(comm, t);  // #2
        if (comm.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2500));
        sdk::collective::allreduce(comm, t);  // #3: rank 0 waits for rank 1
      },
      options);
  const std::vector<comm::HangReport> reports = hangs.taken();
  ASSERT_EQ(reports.size(), 1u);
  const comm::HangReport& r = reports[0];
  EXPECT_EQ(r.rank, 0);
  EXPECT_EQ(r.call, "allreduce");
  EXPECT_EQ(r.seq, 3u);
  EXPECT_TRUE(contains(r.message(),
                       "rank 0 of 2: allreduce #3 (allreduce of 4 float32 (16 bytes)) did not finish "
                       "within 0.2 s"))
      << r.message();
}

TEST(CommunicatorStack, AHungAsyncCollectiveIsNamedUntilItsRequestCompletes) {
  test::HangReports hangs;
  const test::RanksOptions options = hangs.watched(0.2);
  run_ranks(
      2,
      [](comm::HostCommunicator& comm) {
        torch::Tensor t = torch::ones({8});
        if (comm.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2500));
        std::unique_ptr<sdk::Request> request = sdk::collective::allreduce_async(comm, t);
        sdk::collective::wait(request);
      },
      options);
  const std::vector<comm::HangReport> reports = hangs.taken();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].rank, 0);
  EXPECT_EQ(reports[0].call, "allreduce_async");
  EXPECT_EQ(reports[0].seq, 1u);
}

// A hang inside a group names the group, with the group's own sequence.
TEST(CommunicatorStack, AHungGroupCollectiveNamesTheGroup) {
  test::HangReports hangs;
  const test::RanksOptions options = hangs.watched(0.2);
  run_ranks(
      2,
      [](comm::HostCommunicator& comm) {
        std::unique_ptr<sdk::Group> all = sdk::collective::split(comm, 0, comm.rank());
        if (comm.rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2500));
        sdk::collective::barrier(*all);  // the group's #1
      },
      options);
  const std::vector<comm::HangReport> reports = hangs.taken();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].rank, 1);
  EXPECT_EQ(reports[0].group, "split(0)");
  EXPECT_TRUE(contains(reports[0].message(), "rank 1 of 2 in group split(0): barrier #1")) << reports[0].message();
}

// The local backend under the same stack: rank 0 of 1 cannot hang in a collective (every one returns at
// once: there is nobody to wait for), and a receive has no peer, so it fails at once instead of hanging.
TEST(CommunicatorStack, TheLocalBackendCannotHangAndSaysWhy) {
  test::HangReports hangs;
  comm::StackOptions stack;
  stack.timeout_seconds = 0.1;
  stack.on_hang = hangs.handler();
  const auto comm = comm::wrap_communicator(comm::make_local_communicator(), stack);
  torch::Tensor t = torch::ones({4});
  EXPECT_TRUE(comm->allreduce(t, sdk::ReduceOp::Sum).ok);
  EXPECT_TRUE(comm->barrier().ok);
  const auto t0 = std::chrono::steady_clock::now();
  const sdk::Status s = comm->recv(t, 0, 0);
  EXPECT_FALSE(s.ok);
  EXPECT_TRUE(contains(s.message, "recv: a one-rank job has no peers")) << s.message;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(hangs.taken().empty()) << "nothing was left waiting";
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
}

// The registry by name: what the planner asks (features on N ranks), what a job gets (the backend inside
// the stack), and a clear error for a name it does not know. NCCL is compiled in every build here but
// cannot run without a GPU: only its entry is checked (scripts/gpu/nccl_check.cpp runs it on one).
TEST(CommunicatorStack, BackendsRegisterByName) {
  const std::vector<std::string> names = comm::backend_names();
  for (const char* name : {"local", "mpi", "nccl"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  EXPECT_EQ(comm::backend_features("nccl", 2) & sdk::kRecvAny, 0u);
  EXPECT_NE(comm::backend_features("nccl", 1) & sdk::kRecvAny, 0u);
  EXPECT_NE(comm::backend_features("mpi", 4) & sdk::kHierarchicalAlgorithm, 0u);
  try {
    comm::backend_named("gloo");
    FAIL() << "no error for an unknown backend";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "communicator backend 'gloo': no such backend (known: local, mpi, nccl"))
        << e.what();
  }
  const auto local = comm::make_communicator("local");
  EXPECT_STREQ(local->backend(), "local");
  EXPECT_NE(&local->transport(), local.get()) << "the job's communicator is the backend inside the stack";
  EXPECT_STREQ(local->transport().backend(), "local");
  torch::Tensor t = torch::ones({3});
  EXPECT_TRUE(contains(local->send(t, 1, 0).message, "send: a one-rank job has no peers"));
}

// A backend added by name is made and wrapped like the built-in ones.
TEST(CommunicatorStack, ARegisteredBackendIsWrappedLikeTheOthers) {
  comm::BackendEntry entry;
  entry.name = "local-for-test";
  entry.features = [](int) { return sdk::kPointToPoint; };
  entry.built = true;
  entry.make = [](const comm::BackendOptions&) { return comm::make_local_communicator(); };
  comm::register_backend(entry);
  EXPECT_EQ(comm::backend_features("local-for-test", 3), sdk::kPointToPoint);
  const auto comm = comm::make_communicator("local-for-test");
  torch::Tensor t;
  EXPECT_TRUE(contains(comm->allreduce(t, sdk::ReduceOp::Sum).message, "allreduce: the tensor is undefined"));
}

}  // namespace
}  // namespace gradsweep
