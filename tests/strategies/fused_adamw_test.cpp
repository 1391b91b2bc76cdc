// sdk::FusedAdamW (the AdamW of make_optimizer) against LibTorch's torch::optim::AdamW: the same update to
// fp32 rounding, the same state, a checkpoint that resumes exactly, and LibTorch's path for what the fused
// kernel cannot take.
#include <gradsweep/sdk/optimizer.hpp>

#include <gtest/gtest.h>

#include <functional>
#include <sstream>

namespace gradsweep {
namespace {

// Three parameters of the shapes a model has (a matrix, a bias, an embedding), in two groups as
// make_optimizer builds them: matrices decayed, vectors not.
std::vector<torch::Tensor> make_params() {
  torch::manual_seed(7);
  return {torch::randn({64, 32}).requires_grad_(), torch::randn({32}).requires_grad_(),
          torch::randn({100, 16}).requires_grad_()};
}

std::vector<torch::Tensor> clones(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> out;
  for (const auto& p : params) out.push_back(p.detach().clone().requires_grad_());
  return out;
}

template <typename Optimizer>
std::unique_ptr<torch::optim::Optimizer> adamw(const std::vector<torch::Tensor>& params) {
  auto options = [](double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(3e-3).betas({0.9, 0.95}).eps(1e-8).weight_decay(wd));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<torch::Tensor>{params[0], params[2]}, options(0.1));
  groups.emplace_back(std::vector<torch::Tensor>{params[1]}, options(0.0));
  return std::make_unique<Optimizer>(groups, torch::optim::AdamWOptions(3e-3));
}

// Gradients that depend only on the step, written into every parameter list alike.
void set_grads(const std::vector<torch::Tensor>& params, int step) {
  torch::manual_seed(1000 + step);
  for (const auto& p : params) p.mutable_grad() = torch::randn_like(p);
}

double max_relative_difference(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, ((a[i] - b[i]).abs().max() / b[i].abs().max()).item<double>());
  return worst;
}

// Steps [from, to) of two optimizers over their own copies of the parameters, with the same gradients;
// `alter` may change the second copy's gradients before its step.
void step_both(torch::optim::Optimizer& a, const std::vector<torch::Tensor>& a_params, torch::optim::Optimizer& b,
               const std::vector<torch::Tensor>& b_params, int from, int to,
               const std::function<void(const std::vector<torch::Tensor>&)>& alter = {}) {
  for (int step = from; step < to; ++step) {
    set_grads(a_params, step);
    set_grads(b_params, step);
    if (alter) alter(b_params);
    a.step();
    b.step();
  }
}

TEST(FusedAdamW, MatchesLibTorchsAdamWToFp32Rounding) {
  const auto reference_params = make_params();
  const auto fused_params = clones(reference_params);
  auto reference = adamw<torch::optim::AdamW>(reference_params);
  auto fused = adamw<sdk::FusedAdamW>(fused_params);
  step_both(*reference, reference_params, *fused, fused_params, 0, 20);
  // 20 updates of 3e-3 each moved every parameter; the two agree to float32 rounding.
  EXPECT_GT(max_relative_difference(fused_params, make_params()), 1e-3);
  EXPECT_LT(max_relative_difference(fused_params, reference_params), 1e-5);
  EXPECT_EQ(sdk::optimizer_state_bytes(*fused), sdk::optimizer_state_bytes(*reference));
  EXPECT_EQ(sdk::optimizer_state_bytes(*fused), 2u * (64 * 32 + 32 + 100 * 16) * sizeof(float));
}

TEST(FusedAdamW, ResumesFromACheckpointExactly) {
  const auto straight = make_params();
  const auto resumed = clones(straight);
  auto uninterrupted = adamw<sdk::FusedAdamW>(straight);
  auto first = adamw<sdk::FusedAdamW>(resumed);
  step_both(*uninterrupted, straight, *first, resumed, 0, 5);
  std::stringstream checkpoint;
  {
    torch::serialize::OutputArchive archive;
    first->save(archive);
    archive.save_to(checkpoint);
  }
  first.reset();
  auto second = adamw<sdk::FusedAdamW>(resumed);
  {
    torch::serialize::InputArchive archive;
    archive.load_from(checkpoint);
    second->load(archive);
  }
  step_both(*uninterrupted, straight, *second, resumed, 5, 10);
  for (size_t i = 0; i < straight.size(); ++i) EXPECT_TRUE(torch::equal(straight[i], resumed[i])) << i;
}

TEST(FusedAdamW, StridedGradientsTakeLibTorchsPathWithTheSameResult) {
  const auto reference_params = make_params();
  const auto fused_params = clones(reference_params);
  auto reference = adamw<torch::optim::AdamW>(reference_params);
  auto fused = adamw<sdk::FusedAdamW>(fused_params);
  // A transposed copy seen through a transpose: the same values, not contiguous.
  step_both(*reference, reference_params, *fused, fused_params, 0, 3, [](const std::vector<torch::Tensor>& params) {
    params[0].mutable_grad() = params[0].grad().t().contiguous().t();
    ASSERT_FALSE(params[0].grad().is_contiguous());
  });
  EXPECT_LT(max_relative_difference(fused_params, reference_params), 1e-6);
}

TEST(GradNorm, MultiTensorNormAndClipMatchThePerTensorOnes) {
  const auto params = make_params();
  set_grads(params, 0);
  double expected = 0;
  for (const auto& p : params) expected += p.grad().to(torch::kDouble).pow(2).sum().item<double>();
  // Each tensor's norm is taken in float32, as before: the sum agrees to float32 rounding.
  EXPECT_NEAR(sdk::local_grad_norm_squared(params), expected, 1e-6 * expected);
  const double norm = sdk::clip_to_norm(params, expected, 1.0);
  EXPECT_NEAR(norm, std::sqrt(expected), 1e-6 * norm);
  EXPECT_NEAR(std::sqrt(sdk::local_grad_norm_squared(params)), 1.0, 1e-5);
}

}  // namespace
}  // namespace gradsweep
