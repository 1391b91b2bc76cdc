// The mixed-precision step of the -amp strategies (plugins/strategies/common/mixed_precision.hpp) over
// thread-ranks, put together as ring-amp does: bf16 autocast forward, scaled loss, bf16 gradient buckets
// allreduced, overflow seen after communication, unscaled into float32 master weights. Checked: the
// weights stay float32 and follow an fp32 single-process reference within bf16's tolerance, every rank
// holds the same weights, an overflow on one rank skips the step everywhere and backs the scale off, and
// clean steps grow it again.
#include "gradient_buckets.hpp"
#include "mixed_precision.hpp"

#include "support/recording_services.hpp"
#include "support/thread_ranks.hpp"
#include "train/autocast_scope.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace gradsweep {
namespace {

using strategies::Bucket;
using strategies::GradientBuckets;
using strategies::MixedPrecision;

constexpr int kSteps = 4;
constexpr double kLr = 0.05;
constexpr std::int64_t kRowsPerRank = 8;

sdk::Options amp_options(const std::string& precision, const std::string& scaling, std::int64_t inject_step,
                         std::int64_t inject_rank, double backoff = 0.5) {
  return sdk::Options({{"precision", precision},
                       {"comm_dtype", std::string("auto")},
                       {"loss_scaling", scaling},
                       {"init_scale", 1024.0},
                       {"growth_interval", std::int64_t{2}},
                       {"growth_factor", 2.0},
                       {"backoff_factor", backoff},
                       {"inject_overflow_step", inject_step},
                       {"inject_overflow_rank", inject_rank}});
}

// A linear layer, the same initial weights on every rank (a generator of its own: ranks are threads).
std::vector<torch::Tensor> initial_weights() {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(7);
  torch::Tensor weight = at::randn({4, 3}, gen), bias = at::randn({4}, gen);
  return {weight.requires_grad_(), bias.requires_grad_()};
}

// Rank r's rows of the global batch at `step`: the same for any number of ranks.
std::pair<torch::Tensor, torch::Tensor> batch(int rank, int step) {
  const auto gen_seed = static_cast<std::uint64_t>(1000 + 97 * step + rank);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(gen_seed);
  torch::Tensor x = at::randn({kRowsPerRank, 3}, gen);
  torch::Tensor y = at::randn({kRowsPerRank, 4}, gen);
  return {x, y};
}

void sgd(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  for (const auto& p : params) p.detach().add_(p.grad(), -kLr);
}

// fp32, one process, the whole global batch: what the -amp step must approach. `skip` steps are left out.
std::vector<torch::Tensor> reference(int ranks, int skip) {
  std::vector<torch::Tensor> params = initial_weights();
  for (int step = 0; step < kSteps; ++step) {
    if (step == skip) continue;
    std::vector<torch::Tensor> xs, ys;
    for (int r = 0; r < ranks; ++r) {
      auto [x, y] = batch(r, step);
      xs.push_back(x);
      ys.push_back(y);
    }
    for (auto& p : params) p.mutable_grad() = torch::Tensor();
    torch::mse_loss(torch::linear(torch::cat(xs), params[0], params[1]), torch::cat(ys)).backward();
    sgd(params);
  }
  return params;
}

struct RankResult {
  std::vector<torch::Tensor> weights;
  std::vector<double> scales;  // "loss_scale" as recorded each step
  std::vector<bool> applied;   // whether each step's update was applied
  std::vector<std::string> warnings;
};

// kSteps steps of ring-amp's step on this rank.
RankResult amp_steps(sdk::Communicator& comm, const sdk::Options& options) {
  test::RecordingLog log;
  test::RecordingMetrics metrics;
  MixedPrecision amp(options, "ring-amp");
  std::vector<torch::Tensor> params = initial_weights();
  GradientBuckets buckets(params, 24, 1 << 20, amp.comm_dtype());  // two buckets: the bias, then the weight
  RankResult result;
  for (int step = 0; step < kSteps; ++step) {
    for (auto& p : params) p.mutable_grad() = torch::Tensor();
    buckets.begin_step();
    auto [x, y] = batch(comm.rank(), step);
    torch::Tensor out;
    {
      const train::AutocastScope autocast(torch::kCPU, amp.compute_dtype());
      out = torch::linear(x, params[0], params[1]);
    }
    EXPECT_EQ(out.scalar_type(), torch::kBFloat16);
    (torch::mse_loss(out.to(torch::kFloat), y) * amp.loss_scale()).backward();
    const auto launch = [&](Bucket& b) {
      amp.maybe_inject_overflow(step, comm.rank(), b.buffer);
      sdk::check(comm.allreduce_async(b.buffer, sdk::ReduceOp::Sum, &b.request));
    };
    for (std::size_t i = params.size(); i-- > 0;) buckets.ready(i, launch);
    buckets.finish(launch);
    bool overflow = false;
    for (const Bucket& b : buckets.buckets()) overflow = overflow || MixedPrecision::has_overflow(b.buffer);
    const double scale = amp.loss_scale();
    const bool apply = amp.finish_step(overflow, step, log, metrics);
    result.applied.push_back(apply);
    if (apply) {
      for (Bucket& b : buckets.buckets()) {
        std::vector<torch::Tensor> members;
        for (std::size_t i : b.params) members.push_back(params[i]);
        b.layout.unpack_gradients(b.buffer, 1.0 / (comm.size() * scale), members);
      }
      sgd(params);
    }
  }
  result.weights = params;
  result.scales = metrics.values["loss_scale"];
  for (const auto& [level, line] : log.lines)
    if (level == sdk::LogLevel::Warn) result.warnings.push_back(line);
  return result;
}

std::vector<RankResult> run_amp(int ranks, const sdk::Options& options) {
  std::vector<RankResult> results(static_cast<std::size_t>(ranks));
  test::run_ranks(ranks, [&](sdk::Communicator& comm) {
    results[static_cast<std::size_t>(comm.rank())] = amp_steps(comm, options);
  });
  return results;
}

void expect_near_reference(const std::vector<RankResult>& results, const std::vector<torch::Tensor>& expected) {
  for (std::size_t r = 0; r < results.size(); ++r)
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const torch::Tensor& w = results[r].weights[i];
      EXPECT_EQ(w.scalar_type(), torch::kFloat) << "master weights stay float32";
      EXPECT_TRUE(torch::equal(w, results[0].weights[i])) << "rank " << r << " differs from rank 0";
      EXPECT_TRUE(torch::allclose(w, expected[i], 0.0, 4e-3))  // measured: at most 7.5e-4 in 4 bf16 steps
          << "rank " << r << ", parameter " << i << ": max error " << (w - expected[i]).abs().max().item<float>();
    }
}

TEST(MixedPrecisionStep, FollowsTheFp32ReferenceAndRanksAgree) {
  for (int ranks : {1, 2, 4}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    const auto results = run_amp(ranks, amp_options("bf16", "dynamic", -1, 0));
    expect_near_reference(results, reference(ranks, -1));
    for (const auto& r : results) EXPECT_EQ(r.applied, std::vector<bool>(kSteps, true));
  }
}

// Step 1 overflows on rank 2 only: after the allreduce every rank sees it, skips the step and halves the
// scale (1024 -> 512); two clean steps (growth_interval 2) double it again.
TEST(MixedPrecisionStep, AnOverflowOnOneRankSkipsTheStepEverywhereAndBacksOff) {
  const auto results = run_amp(4, amp_options("bf16", "dynamic", 1, 2));
  expect_near_reference(results, reference(4, 1));
  for (const auto& r : results) {
    EXPECT_EQ(r.applied, (std::vector<bool>{true, false, true, true}));
    EXPECT_EQ(r.scales, (std::vector<double>{1024, 512, 512, 1024}));
    ASSERT_EQ(r.warnings.size(), 1u);
    EXPECT_EQ(r.warnings[0], "step 1: gradient overflow (inf/NaN); update skipped, loss scale lowered to 512");
  }
}

// bf16 without loss scaling (auto's choice): the scale stays 1 and an overflow only skips the step.
TEST(MixedPrecisionStep, WithoutScalingAnOverflowOnlySkips) {
  const auto results = run_amp(2, amp_options("bf16", "auto", 2, 1));
  for (const auto& r : results) {
    EXPECT_EQ(r.scales, std::vector<double>(kSteps, 1.0));
    EXPECT_EQ(r.applied, (std::vector<bool>{true, true, false, true}));
  }
  expect_near_reference(results, reference(2, 2));
}

// What a sharded strategy uses to agree on its verdict: true everywhere when true on any rank.
TEST(MixedPrecisionStep, AnyRankIsTrueEverywhereWhenTrueOnOne) {
  test::run_ranks(4, [](sdk::Communicator& comm) {
    EXPECT_TRUE(strategies::any_rank(comm, comm.rank() == 3));
    EXPECT_FALSE(strategies::any_rank(comm, false));
    EXPECT_TRUE(strategies::any_rank(comm, true));
  });
}

TEST(MixedPrecisionStep, BadSettingsAreRefusedNamingTheStrategy) {
  const auto message = [](const sdk::Options& options) {
    try {
      MixedPrecision amp(options, "dps-amp");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message(amp_options("fp32", "auto", -1, 0)).find("strategy 'dps-amp': precision fp32 is the plain"),
            std::string::npos);
  EXPECT_NE(message(amp_options("bf16", "dynamic", -1, 0, 1.5)).find("0 < backoff_factor < 1"), std::string::npos);
}

}  // namespace
}  // namespace gradsweep
