// The one-rank backend counts like the MPI one: every call once, its size S, no bytes, blocked = busy.
#include "comm/host_communicator.hpp"

#include <gtest/gtest.h>

namespace gradsweep {
namespace {

TEST(LocalCommunicator, CountsCallsPayloadAndTimes) {
  auto comm = host::make_local_communicator();
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
  const host::CommStats s = comm->take_stats();
  EXPECT_EQ(s.calls, 5u);
  EXPECT_EQ(s.payload_bytes, 4u * 1024u);
  EXPECT_EQ(s.bytes_sent, 0u);
  EXPECT_EQ(s.bytes_received, 0u);
  EXPECT_GE(s.seconds, 0.0);
  EXPECT_DOUBLE_EQ(s.blocked_seconds, s.seconds);
  EXPECT_EQ(comm->take_stats().calls, 0u);  // taken
}

TEST(LocalCommunicator, EveryAlgorithmIsTheCommunicatorAndRecvAnyHasNoPeers) {
  auto comm = host::make_local_communicator();
  sdk::Communicator* view = nullptr;
  ASSERT_TRUE(comm->with_algorithm(sdk::Algorithm::Ring, &view).ok);
  EXPECT_EQ(view, comm.get());
  torch::Tensor t = torch::zeros({4});
  int source = -1;
  const sdk::Status s = comm->recv_any(t, 0, &source);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.message.find("no peers"), std::string::npos) << s.message;
}

}  // namespace
}  // namespace gradsweep
