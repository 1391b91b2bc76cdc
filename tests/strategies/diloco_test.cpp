// `diloco` in real MPI jobs on gpt2-tiny and the fortunes corpus: with one inner step, plain outer SGD
// and an inner SGD it is data-parallel SGD and reproduces `single`; with H = 5 it trains, talks only on
// outer steps (exactly one allreduce of the parameters), resumes bit for bit from the middle of a round,
// and refuses options out of range.
#include "strategies/strategy_runs.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <sstream>

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;

// Plain SGD without momentum, weight decay or clipping: averaging the parameters after one step is then
// stepping with the averaged gradient. (Clipping would use each rank's own norm, momentum each rank's own
// buffer: both differ from `single`'s.)
const std::vector<std::string> kPlainSgd{"train.optimizer=sgd", "train.momentum=0", "train.weight_decay=0",
                                         "train.grad_clip=0", "train.lr=0.5"};

class DilocoOneInnerStep : public ::testing::TestWithParam<int> {};

TEST_P(DilocoOneInnerStep, WithPlainSgdMatchesSingle) {
  const int ranks = GetParam();
  const TrainingRun& reference = single_reference(TinyModel::Gpt2, 20, kPlainSgd);
  const TrainingRun run =
      train_tiny(TinyModel::Gpt2, ranks, "diloco",
                 with(kPlainSgd, {"strategy.inner_steps=1", "strategy.outer_lr=1", "strategy.outer_momentum=0"}));
  ASSERT_EQ(run.result.exit_code, 0) << run.result.output;
  ASSERT_EQ(run.steps.size(), 20u);
  EXPECT_LT(max_relative_difference(run.losses(), reference.losses()), 1e-5);
  EXPECT_LT(run.losses().back(), run.losses().front());
  // Evaluated on the global parameters, which are `single`'s.
  EXPECT_NEAR(run.summary.at("val_loss").get<double>(), reference.summary.at("val_loss").get<double>(),
              1e-5 * reference.summary.at("val_loss").get<double>());
  for (const auto& s : run.steps) EXPECT_EQ(s.at("plugin").at("outer_step").get<double>(), 1.0);
}

INSTANTIATE_TEST_SUITE_P(Diloco, DilocoOneInnerStep, ::testing::Values(2, 4),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

// Bytes of one allreduce of `params` float32 values on `ranks` ranks, as the communicators count it
// (docs/communicators.md): 2(n-1)/n of the tensor each way, rounded down.
double allreduce_bytes(std::int64_t params, int ranks) {
  return static_cast<double>(2 * static_cast<std::uint64_t>(ranks - 1) * static_cast<std::uint64_t>(params) * 4 /
                             static_cast<std::uint64_t>(ranks));
}

class DilocoFiveInnerSteps : public ::testing::TestWithParam<int> {};

TEST_P(DilocoFiveInnerSteps, TrainsAndSendsOneParameterAllreducePerRound) {
  const int ranks = GetParam();
  // AdamW inside, the paper's outer settings (lr 0.7, Nesterov momentum 0.9).
  const TrainingRun run = train_tiny(TinyModel::Gpt2, ranks, "diloco", {"strategy.inner_steps=5"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.output;
  ASSERT_EQ(run.steps.size(), 20u);
  const auto losses = run.losses();
  EXPECT_LT((losses[17] + losses[18] + losses[19]) / 3, losses[0] - 0.3) << "it did not train";
  EXPECT_LT(run.summary.at("val_loss").get<double>(), losses[0] - 0.3);
  const double outer_bytes = allreduce_bytes(run.summary.at("params").get<std::int64_t>(), ranks);
  for (const auto& s : run.steps) {
    const std::int64_t step = s.at("step").get<std::int64_t>();
    const bool outer = (step + 1) % 5 == 0;
    EXPECT_EQ(s.at("plugin").at("outer_step").get<double>(), outer ? 1.0 : 0.0) << "step " << step;
    for (const auto& sent : s.at("ranks").at("bytes_sent"))
      EXPECT_EQ(sent.get<double>(), outer ? outer_bytes : 0.0) << "step " << step;
  }
  // The outer momentum is one float32 per parameter, on top of AdamW's two.
  const auto& plugin = run.steps.back().at("plugin");
  const double params = run.summary.at("params").get<double>();
  EXPECT_EQ(plugin.at("outer_state_bytes").get<double>(), 4 * params);
  EXPECT_EQ(plugin.at("optimizer_state_bytes").get<double>(), 12 * params);
}

INSTANTIATE_TEST_SUITE_P(Diloco, DilocoFiveInnerSteps, ::testing::Values(2, 4),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

// Stopped after step 7 of 12 with H = 5: the checkpoint falls two inner steps into the second round, so
// the resumed run needs each rank's own parameters, its inner AdamW state, the round's global parameters
// and the outer momentum back exactly.
TEST(DilocoResume, InterruptedInTheMiddleOfARoundEqualsUninterrupted) {
  const std::vector<std::string> options{"strategy.inner_steps=5", "checkpoint.every=7"};
  const TrainingRun whole = train_tiny(TinyModel::Gpt2, 2, "diloco", options, 12);
  ASSERT_EQ(whole.result.exit_code, 0) << whole.result.output;
  const fs::path out = whole.dir.parent_path() / "resumed";
  std::string command = gradsweep_binary().string() + " train " + (whole.dir.parent_path() / "cell.yaml").string() +
                        " --out " + out.string();
  for (const auto& o : options) command += " --set " + o;
  const auto cut = run_command(mpirun(2, command + " --stop-after 7", "", 120));
  ASSERT_EQ(cut.exit_code, 0) << cut.output;
  ASSERT_TRUE(fs::exists(out / "checkpoint" / "rank-1" / "step-7" / "state.json"));
  const auto resumed = run_command(mpirun(2, command, "", 120));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(read_text(out / "rank-0.log").find("at step 7"), std::string::npos) << resumed.output;
  TrainingRun again;
  std::istringstream lines(read_text(out / "metrics.jsonl"));
  for (std::string line; std::getline(lines, line);) again.steps.push_back(nlohmann::json::parse(line));
  EXPECT_EQ(again.losses(), whole.losses());  // bit for bit
  const auto summary = nlohmann::json::parse(read_text(out / "summary.json"));
  EXPECT_EQ(summary.at("val_loss").get<double>(), whole.summary.at("val_loss").get<double>());
}

struct BadOption {
  const char* label;
  const char* set;
  const char* message;
};
std::ostream& operator<<(std::ostream& out, const BadOption& o) { return out << o.set; }

class DilocoRefuses : public ::testing::TestWithParam<BadOption> {};

TEST_P(DilocoRefuses, OptionsOutOfRange) {
  const TrainingRun run = train_tiny(TinyModel::Gpt2, 1, "diloco", {GetParam().set}, 1);
  EXPECT_NE(run.result.exit_code, 0) << run.result.output;
  EXPECT_NE(run.result.output.find(GetParam().message), std::string::npos) << run.result.output;
  EXPECT_TRUE(run.steps.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Diloco, DilocoRefuses,
    ::testing::Values(BadOption{"inner_steps_0", "strategy.inner_steps=0", "inner_steps must be >= 1, got 0"},
                      BadOption{"outer_lr_0", "strategy.outer_lr=0", "outer_lr must be > 0, got 0"},
                      BadOption{"outer_momentum_1", "strategy.outer_momentum=1",
                                "outer_momentum must be in [0, 1), got 1"},
                      BadOption{"outer_momentum_negative", "strategy.outer_momentum=-0.5",
                                "outer_momentum must be in [0, 1), got -0.5"}),
    [](const auto& info) { return std::string(info.param.label); });

}  // namespace
}  // namespace gradsweep::test
