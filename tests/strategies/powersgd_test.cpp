// `powersgd` in real MPI jobs on gpt2-tiny and the fortunes corpus: the loss falls, every step moves the
// bytes its P's, Q's and uncompressed tensors account for, the ranks end with identical parameters, a
// cut and resumed run is the uninterrupted one bit for bit (Q's and residuals checkpointed), dense steps
// reproduce `single`, and bad options are refused.
#include "strategies/compressed_runs.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace gradsweep::test {
namespace {

// P, Q and uncompressed elements per step, by the rule docs/strategies.md states: a tensor of dim >= 2
// with at least min_compress_size elements, seen as rows x rest, is compressed when (rows + rest) * r <
// rows * rest, with r = min(rank, rows, rest).
struct Floats {
  std::int64_t p = 0, q = 0, dense = 0, total = 0;
};

Floats powersgd_floats(std::int64_t rank, std::int64_t min_compress_size) {
  Floats f;
  for (const auto& shape : gpt2_tiny_shapes()) {
    const std::int64_t numel = numel_of(shape);
    f.total += numel;
    if (shape.size() >= 2 && numel >= min_compress_size) {
      const std::int64_t rows = shape[0], cols = numel / rows, r = std::min({rank, rows, cols});
      if ((rows + cols) * r < numel) {
        f.p += rows * r;
        f.q += cols * r;
        continue;
      }
    }
    f.dense += numel;
  }
  return f;
}

// Dense steps allreduce the whole gradient; compressed ones three buffers.
auto powersgd_bytes(std::int64_t rank, std::int64_t min_compress_size, std::int64_t start_step, int ranks) {
  const Floats f = powersgd_floats(rank, min_compress_size);
  return [=](std::int64_t step) {
    if (step < start_step) return allreduce_bytes(f.total, ranks);
    return allreduce_bytes(f.p, ranks) + allreduce_bytes(f.q, ranks) + allreduce_bytes(f.dense, ranks);
  };
}

TEST(PowerSgdRuns, TheShapesAccountForGpt2Tiny) {
  const Floats f = powersgd_floats(2, 1024);
  EXPECT_EQ(f.total, 126720);
  EXPECT_EQ(f.p + f.q + f.dense, 6976);  // what the strategy logs, 18.2x fewer than the dense 126,720
}

// Two ranks, compression from step 4 of 12; checkpoints every 4 steps. The whole run trains and moves
// the bytes claimed; a run cut after 10 steps and resumed from step 8 ends identical to it.
TEST(PowerSgdRuns, TwoRanksTrainMoveTheClaimedBytesAndResumeBitForBit) {
  const auto dir = scratch_dir();
  const std::vector<std::string> options{"strategy.start_step=4", "checkpoint.every=4"};
  const TrainingRun whole = train_into(dir, "whole", 2, "powersgd", options, 12);
  ASSERT_EQ(whole.result.exit_code, 0) << whole.result.output;
  ASSERT_EQ(whole.steps.size(), 12u);
  EXPECT_LT(whole.losses().back(), whole.losses().front() - 1.0);
  EXPECT_EQ(unexpected_bytes(whole, 2, powersgd_bytes(2, 1024, 4, 2)), "");
  EXPECT_EQ(parameters_differ(whole.dir, 2, 12), "");
  EXPECT_NE(whole.log(0).find("10 of 28 tensors compressed; 6976 floats allreduced per step"), std::string::npos);

  const TrainingRun cut = train_into(dir, "resumed", 2, "powersgd", options, 12, " --stop-after 10");
  ASSERT_EQ(cut.result.exit_code, 0) << cut.result.output;
  const TrainingRun resumed = train_into(dir, "resumed", 2, "powersgd", options, 12);
  ASSERT_EQ(resumed.result.exit_code, 0) << resumed.result.output;
  EXPECT_NE(resumed.log(0).find("at step 8"), std::string::npos) << resumed.log(0);
  EXPECT_EQ(resumed.losses(), whole.losses());  // bit for bit
  EXPECT_EQ(parameters_differ(resumed.dir, 2, 12), "");
}

// Four ranks at PyTorch's default rank 1, with a size threshold that leaves wpe (32 x 64) uncompressed.
TEST(PowerSgdRuns, FourRanksAtRankOneAgreeAndMoveTheClaimedBytes) {
  const std::vector<std::string> options{"strategy.rank=1", "strategy.min_compress_size=4096", "strategy.start_step=2"};
  const TrainingRun run = train_tiny(TinyModel::Gpt2, 4, "powersgd", options, 12);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.output;
  ASSERT_EQ(run.steps.size(), 12u);
  EXPECT_LT(run.losses().back(), run.losses().front() - 1.0);
  EXPECT_EQ(unexpected_bytes(run, 4, powersgd_bytes(1, 4096, 2, 4)), "");
  EXPECT_EQ(parameters_differ(run.dir, 4, 12), "");
  EXPECT_NE(run.log(0).find("9 of 28 tensors compressed"), std::string::npos) << run.log(0);
}

// Before start_step every step is a dense allreduce of the mean gradient: `single`'s loss curve.
TEST(PowerSgdRuns, DenseStepsBeforeStartStepReproduceSingle) {
  const TrainingRun& reference = single_reference(TinyModel::Gpt2);
  const TrainingRun run = train_tiny(TinyModel::Gpt2, 2, "powersgd", {"strategy.start_step=1000"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.output;
  ASSERT_EQ(run.steps.size(), 20u);
  EXPECT_LT(max_relative_difference(run.losses(), reference.losses()), 1e-5);
  EXPECT_EQ(unexpected_bytes(run, 2, powersgd_bytes(2, 1024, 1000, 2)), "");
}

TEST(PowerSgdRuns, BadOptionsAreRefusedNamingTheKeyAndTheRange) {
  const TrainingRun rank0 = train_tiny(TinyModel::Gpt2, 1, "powersgd", {"strategy.rank=0"}, 2);
  EXPECT_NE(rank0.result.exit_code, 0);
  EXPECT_NE(rank0.result.output.find("strategy 'powersgd': rank is 0 but must be >= 1"), std::string::npos)
      << rank0.result.output;
  const TrainingRun start = train_tiny(TinyModel::Gpt2, 1, "powersgd", {"strategy.start_step=-1"}, 2);
  EXPECT_NE(start.result.exit_code, 0);
  EXPECT_NE(start.result.output.find("start_step is -1 but must be >= 0"), std::string::npos) << start.result.output;
}

}  // namespace
}  // namespace gradsweep::test
