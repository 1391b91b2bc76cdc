// The one-rank backend in the stack's layers (as a strategy gets it): counted like every backend by the
// counting layer, every call once, its size S, no bytes, blocked = busy.
#include "comm/layers/communicator_stack.hpp"
#include "comm/core/host_communicator.hpp"
#include "comm/core/host_group.hpp"

#include <gtest/gtest.h>

namespace gradsweep {
namespace {

TEST(LocalCommunicator, CountsCallsPayloadAndTimes) {
  auto comm = comm::wrap_communicator(comm::make_local_communicator());
  torch::Tensor t = torch::ones({256});
  ASSERT_TRUE(comm->allreduce(t, sdk::ReduceOp::Sum).ok);
  torch::Tensor out = torch::zeros({256});
  ASSERT_TRUE(comm->allgather(t, out).ok);
  EXPECT_TRUE(torch::equal(out, t));
  ASSERT_TRUE(comm->reduce_scatter(t, out, sdk::ReduceOp::Sum).ok);
  std::unique_ptr<sdk::Request> request;
  ASSERT_TRUE(comm->allreduce_async(t, sdk::ReduceOp::Sum, &request).ok);
  ASSERT_TRUE(request->wait().ok);
  ASSERT_TRUE(comm->barrier().ok);
  const comm::CommStats s = comm->take_stats();
  EXPECT_EQ(s.calls, 5u);
  EXPECT_EQ(s.payload_bytes, 4u * 1024u);
  EXPECT_EQ(s.bytes_sent, 0u);
  EXPECT_EQ(s.bytes_received, 0u);
  EXPECT_GE(s.seconds, 0.0);
  EXPECT_DOUBLE_EQ(s.blocked_seconds, s.seconds);
  EXPECT_EQ(comm->take_stats().calls, 0u);  // taken
}

TEST(LocalCommunicator, EveryAlgorithmIsTheCommunicatorAndRecvAnyHasNoPeers) {
  auto comm = comm::wrap_communicator(comm::make_local_communicator());
  sdk::Communicator* view = nullptr;
  ASSERT_TRUE(comm->with_algorithm(sdk::Algorithm::Ring, &view).ok);
  EXPECT_EQ(view, comm.get());
  torch::Tensor t = torch::zeros({4});
  int source = -1;
  const sdk::Status s = comm->recv_any(t, 0, &source);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.message.find("no peers"), std::string::npos) << s.message;
}

// Sub-communicators on one rank: a group of one, named like the MPI backend's, counted in the parent's
// totals and under its name, refusing a negative color and any call once its parent is gone.
TEST(LocalCommunicator, GroupsAreOneRankNamedAndCountedInTheParent) {
  auto comm = comm::wrap_communicator(comm::make_local_communicator());
  EXPECT_NE(comm->features() & sdk::kGroups, 0u);
  std::unique_ptr<sdk::Group> split, node, across;
  ASSERT_TRUE(comm->split(3, 0, &split).ok);
  ASSERT_TRUE(comm->group(sdk::GroupKind::Node, &node).ok);
  ASSERT_TRUE(comm->group(sdk::GroupKind::AcrossNodes, &across).ok);
  EXPECT_STREQ(split->name(), "split(3)");
  EXPECT_STREQ(node->name(), "node");
  EXPECT_STREQ(across->name(), "across_nodes");
  EXPECT_EQ(split->size(), 1);
  EXPECT_EQ(split->rank(), 0);
  EXPECT_STREQ(split->backend(), "local");

  torch::Tensor t = torch::full({64}, 2.0f);
  ASSERT_TRUE(split->allreduce(t, sdk::ReduceOp::Sum).ok);
  EXPECT_TRUE(torch::equal(t, torch::full({64}, 2.0f)));
  ASSERT_TRUE(node->barrier().ok);
  ASSERT_TRUE(comm->barrier().ok);
  const comm::CommStats own = dynamic_cast<comm::HostGroup&>(*split).host().take_stats();
  EXPECT_EQ(own.calls, 1u);
  EXPECT_EQ(own.payload_bytes, 256u);
  const comm::CommStats total = comm->take_stats();
  EXPECT_EQ(total.calls, 3u);  // the parent's barrier and both groups' calls
  EXPECT_EQ(total.payload_bytes, 256u);
  const comm::GroupStats groups = comm->take_group_stats();
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups.at("split(3)").calls, 1u);
  EXPECT_EQ(groups.at("split(3)").payload_bytes, 256u);
  EXPECT_EQ(groups.at("node").calls, 1u);

  std::unique_ptr<sdk::Group> refused;
  const sdk::Status negative = comm->split(-1, 0, &refused);
  EXPECT_FALSE(negative.ok);
  EXPECT_NE(negative.message.find("split: color -1"), std::string::npos) << negative.message;
  EXPECT_NE(negative.message.find("every rank must be in a group"), std::string::npos) << negative.message;
  EXPECT_EQ(refused, nullptr);

  comm.reset();
  const sdk::Status gone = split->allreduce(t, sdk::ReduceOp::Sum);
  EXPECT_FALSE(gone.ok);
  EXPECT_NE(gone.message.find("group split(3): its parent communicator was destroyed"), std::string::npos)
      << gone.message;
  std::unique_ptr<sdk::Request> request;
  EXPECT_FALSE(node->allreduce_async(t, sdk::ReduceOp::Sum, &request).ok);
  std::unique_ptr<sdk::Group> inner;
  const sdk::Status nested = across->split(0, 0, &inner);
  EXPECT_FALSE(nested.ok);
  EXPECT_NE(nested.message.find("group across_nodes: split: its parent communicator was destroyed"), std::string::npos)
      << nested.message;
}

}  // namespace
}  // namespace gradsweep
