// The parameter-server protocol of `ps` and `sampled` (plugins/strategies/common/parameter_server_protocol)
// in process: a server and workers as thread-ranks (support/thread_ranks.hpp), with a toy "optimizer"
// whose parameters are the running sum of what it applied, so that every answer says exactly which
// gradients reached it and in what order.
#include "parameter_server_protocol.hpp"

#include "support/recording_services.hpp"
#include "support/thread_ranks.hpp"

#include <gtest/gtest.h>

#include <torch/torch.h>

#include <algorithm>
#include <mutex>
#include <set>

namespace gradsweep {
namespace {

using strategies::ParameterServerProtocol;
using strategies::PullHeader;
using strategies::PushHeader;

constexpr std::int64_t kSize = 5;

// Rank r's gradient at step s: every element r + 1 + 10 s (the server's, rank 0, is 1 + 10 s).
torch::Tensor gradient(int rank, std::int64_t step) {
  return torch::full({kSize}, static_cast<double>(rank + 1 + 10 * step), torch::kFloat);
}

// The server's side of one step: parameters -= (sum of the gradients) / count, one update per apply.
struct ToyServer {
  torch::Tensor params = torch::zeros({kSize}, torch::kFloat);
  torch::Tensor sum = torch::zeros({kSize}, torch::kFloat);
  std::vector<double> applied;  // the first element of each gradient applied (async) or of each mean (sync)

  ParameterServerProtocol::Handlers handlers(std::int64_t step, bool computes) {
    ParameterServerProtocol::Handlers h;
    h.incoming = torch::zeros({kSize}, torch::kFloat);
    sum = computes ? gradient(0, step) : torch::zeros({kSize}, torch::kFloat);
    h.own = computes ? 1 : 0;
    h.add = [this](const torch::Tensor& g) { sum.add_(g); };
    h.apply_sum = [this](double count) { return update(sum / count); };
    if (computes) h.apply_own = [this, step] { return update(gradient(0, step)); };
    h.apply_push = [this](const torch::Tensor& g, const PushHeader&) { return update(g); };
    h.answer = [this] { return params.clone(); };
    return h;
  }
  sdk::StepResult update(const torch::Tensor& g) {
    params.sub_(g);
    applied.push_back(g[0].item<double>());
    return {true, g[0].item<double>()};
  }
};

TEST(ParameterServerProtocol, SyncAveragesEveryGradientInOneUpdateAndAnswersAllWorkers) {
  std::mutex mutex;
  std::vector<torch::Tensor> answers(4);
  std::vector<std::int64_t> versions(4);
  test::RecordingMetrics metrics;
  std::vector<double> applied;
  test::run_ranks(4, [&](sdk::Communicator& comm) {
    ParameterServerProtocol protocol(comm, "test", /*async=*/false);
    ToyServer server;
    torch::Tensor received = torch::zeros({kSize}, torch::kFloat);
    for (std::int64_t step = 0; step < 2; ++step) {
      if (protocol.server()) {
        protocol.serve(step, server.handlers(step, true), metrics);
        received = server.params;
      } else {
        protocol.push(step, gradient(comm.rank(), step));
        const PullHeader answer = protocol.pull(received);
        EXPECT_TRUE(answer.applied);
      }
    }
    const std::lock_guard<std::mutex> lock(mutex);
    answers[comm.rank()] = received.clone();
    versions[comm.rank()] = protocol.version();
    if (protocol.server()) applied = server.applied;
  });
  // Step 0: mean of 1, 2, 3, 4 = 2.5; step 1: mean of 11..14 = 12.5. One update per step.
  EXPECT_EQ(applied, (std::vector<double>{2.5, 12.5}));
  for (int r = 0; r < 4; ++r) {
    EXPECT_TRUE(torch::equal(answers[r], torch::full({kSize}, -15.0, torch::kFloat))) << "rank " << r;
    EXPECT_EQ(versions[r], 2) << "rank " << r;
  }
  // Each worker moved its gradient and a parameter answer per step, headers included.
  EXPECT_EQ(metrics.values.at("ps_push_bytes_per_worker").back(), static_cast<double>(kSize * 4 + 3 * 8));
  EXPECT_EQ(metrics.values.at("ps_pull_bytes_per_worker").back(), static_cast<double>(kSize * 4 + 4 * 8));
  EXPECT_EQ(metrics.values.count("staleness_mean"), 0u);
}

TEST(ParameterServerProtocol, AsyncAppliesEachGradientAloneAndRecordsStaleness) {
  std::mutex mutex;
  std::set<std::int64_t> worker_versions;
  test::RecordingMetrics metrics;
  std::vector<double> applied;
  torch::Tensor final_params;
  test::run_ranks(4, [&](sdk::Communicator& comm) {
    ParameterServerProtocol protocol(comm, "test", /*async=*/true);
    ToyServer server;
    if (protocol.server()) {
      protocol.serve(0, server.handlers(0, true), metrics);
      const std::lock_guard<std::mutex> lock(mutex);
      applied = server.applied;
      final_params = server.params;
      EXPECT_EQ(protocol.version(), 4);
      return;
    }
    torch::Tensor received = torch::zeros({kSize}, torch::kFloat);
    protocol.push(0, gradient(comm.rank(), 0));
    const PullHeader answer = protocol.pull(received);
    // The answer is the parameters right after this worker's own update.
    EXPECT_EQ(answer.grad_norm, comm.rank() + 1);
    const std::lock_guard<std::mutex> lock(mutex);
    worker_versions.insert(answer.version);
  });
  // The server's own gradient first, then each worker's alone, in whatever order they arrived.
  ASSERT_EQ(applied.size(), 4u);
  EXPECT_EQ(applied.front(), 1.0);
  std::vector<double> workers(applied.begin() + 1, applied.end());
  std::sort(workers.begin(), workers.end());
  EXPECT_EQ(workers, (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(worker_versions, (std::set<std::int64_t>{2, 3, 4}));
  EXPECT_TRUE(torch::equal(final_params, torch::full({kSize}, -10.0, torch::kFloat)));
  // Computed on version 0, the three pushes met the server at versions 1, 2 and 3.
  EXPECT_EQ(metrics.values.at("staleness_mean").back(), 2.0);
  EXPECT_EQ(metrics.values.at("staleness_max").back(), 3.0);
}

TEST(ParameterServerProtocol, AServerThatOnlyServesAveragesTheWorkersAlone) {
  std::vector<double> applied;
  test::RecordingMetrics metrics;
  test::run_ranks(3, [&](sdk::Communicator& comm) {
    ParameterServerProtocol protocol(comm, "test", /*async=*/false);
    ToyServer server;
    torch::Tensor received = torch::zeros({kSize}, torch::kFloat);
    if (protocol.server()) {
      protocol.serve(0, server.handlers(0, false), metrics);
      applied = server.applied;
    } else {
      protocol.push(0, gradient(comm.rank(), 0));
      protocol.pull(received);
      EXPECT_TRUE(torch::equal(received, torch::full({kSize}, -2.5, torch::kFloat)));
    }
  });
  EXPECT_EQ(applied, (std::vector<double>{2.5}));  // (2 + 3) / 2: the server's own gradient is not in it
}

TEST(ParameterServerProtocol, AWorkerOutOfStepIsAnErrorNamingBothSteps) {
  const test::RanksOutcome outcome = test::try_ranks(2, [&](sdk::Communicator& comm) {
    ParameterServerProtocol protocol(comm, "test", /*async=*/false);
    ToyServer server;
    test::RecordingMetrics metrics;
    torch::Tensor received = torch::zeros({kSize}, torch::kFloat);
    if (protocol.server()) {
      protocol.serve(3, server.handlers(3, true), metrics);
    } else {
      protocol.push(4, gradient(1, 4));
      protocol.pull(received);
    }
  });
  ASSERT_TRUE(outcome.failure.has_value());
  EXPECT_EQ(outcome.failure->rank, 0);
  EXPECT_NE(outcome.errors[0].find("strategy 'test': worker 1 pushed step 4 while the server is at step 3"),
            std::string::npos)
      << outcome.errors[0];
  EXPECT_FALSE(outcome.errors[1].empty()) << "the worker waiting for its answer must get an error";
}

// A worker that fails between steps leaves the server waiting for its push and the other workers
// waiting for their answers: all of them get an error rather than waiting forever. The barrier after
// each step stands for the trainer's per-step report, which keeps the ranks within one step.
TEST(ParameterServerProtocol, AWorkerThatThrowsMidRunFailsEveryRankInsteadOfHanging) {
  for (const bool async : {false, true}) {
    const test::RanksOutcome outcome = test::try_ranks(3, [&](sdk::Communicator& comm) {
      ParameterServerProtocol protocol(comm, "test", async);
      ToyServer server;
      test::RecordingMetrics metrics;
      torch::Tensor received = torch::zeros({kSize}, torch::kFloat);
      for (std::int64_t step = 0; step < 3; ++step) {
        if (protocol.server()) {
          protocol.serve(step, server.handlers(step, true), metrics);
        } else {
          if (comm.rank() == 2 && step == 1) throw std::runtime_error("worker 2 failed in step 1");
          protocol.push(step, gradient(comm.rank(), step));
          protocol.pull(received);
        }
        sdk::collective::barrier(comm);
      }
    });
    ASSERT_TRUE(outcome.failure.has_value()) << "async " << async;
    EXPECT_EQ(outcome.failure->rank, 2) << "async " << async;
    EXPECT_NE(outcome.failure->message.find("worker 2 failed in step 1"), std::string::npos)
        << outcome.failure->message;
    ASSERT_EQ(outcome.errors.size(), 3u);
    EXPECT_FALSE(outcome.errors[0].empty()) << "async " << async << ": the server must get an error";
    EXPECT_FALSE(outcome.errors[1].empty()) << "async " << async << ": worker 1 must get an error";
  }
}

}  // namespace
}  // namespace gradsweep
