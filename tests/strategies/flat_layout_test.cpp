// FlatLayout (plugins/strategies/common/flat_layout.hpp): where each parameter sits in one flat vector,
// packing and unpacking parameters and gradients (cast to the buffer's dtype, missing gradients as
// zeros), and a flat gradient averaged over thread-ranks and unpacked equal to the mean of the ranks'.
#include "flat_layout.hpp"

#include "support/thread_ranks.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace gradsweep {
namespace {

using strategies::FlatLayout;

// Mixed shapes, a zero-dimensional one among them, filled with values exact in bfloat16.
std::vector<torch::Tensor> mixed_params(int seed) {
  const std::vector<std::vector<std::int64_t>> shapes = {{2, 3}, {5}, {1, 1, 4}, {}, {3, 2}};
  std::vector<torch::Tensor> params;
  int k = seed;
  for (const auto& shape : shapes) {
    torch::Tensor p = torch::empty(shape);
    p.view({-1}).copy_(torch::arange(p.numel()).to(torch::kFloat) * 0.25 + (k++));
    params.push_back(p.requires_grad_());
  }
  return params;
}

TEST(FlatLayout, OffsetsFollowTheParameterOrder) {
  auto params = mixed_params(0);
  const FlatLayout layout(params);
  EXPECT_EQ(layout.count(), 5u);
  EXPECT_EQ(layout.numel(), 6 + 5 + 4 + 1 + 6);
  const std::vector<std::int64_t> offsets = {0, 6, 11, 15, 16}, sizes = {6, 5, 4, 1, 6};
  for (std::size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(layout.offset(i), offsets[i]) << i;
    EXPECT_EQ(layout.numel(i), sizes[i]) << i;
  }
  EXPECT_EQ(FlatLayout().numel(), 0);
  EXPECT_EQ(FlatLayout(std::vector<torch::Tensor>{}).count(), 0u);
}

TEST(FlatLayout, ParametersRoundTripThroughTheFlatVector) {
  auto params = mixed_params(1);
  std::vector<torch::Tensor> before;
  for (const auto& p : params) before.push_back(p.detach().clone());
  const FlatLayout layout(params);
  torch::Tensor flat = torch::zeros({layout.numel()});
  layout.pack_parameters(params, flat);
  for (std::size_t i = 0; i < params.size(); ++i)
    EXPECT_TRUE(torch::equal(layout.slice(flat, i), before[i].reshape({-1}))) << i;

  {
    torch::NoGradGuard no_grad;
    for (const auto& p : params) p.zero_();
  }
  layout.unpack_parameters(flat, params);
  for (std::size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].sizes(), before[i].sizes()) << i;
    EXPECT_TRUE(torch::equal(params[i], before[i])) << i;
  }
}

// Gradients go on the wire in the buffer's dtype (here bfloat16); a parameter without a gradient packs
// as zeros, and unpacking creates its float32 gradient.
TEST(FlatLayout, GradientsPackInTheWireDtypeAndUnpackScaledIntoFloat32) {
  auto params = mixed_params(2);
  for (std::size_t i = 0; i < params.size(); ++i)
    if (i != 3) params[i].mutable_grad() = params[i].detach() * 2;  // parameter 3 has no gradient
  const FlatLayout layout(params);
  torch::Tensor wire = torch::full({layout.numel()}, 7.0, torch::kBFloat16);
  layout.pack_gradients(params, wire);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const torch::Tensor expected =
        i == 3 ? torch::zeros({1}, torch::kBFloat16) : (params[i].detach() * 2).reshape({-1}).to(torch::kBFloat16);
    EXPECT_TRUE(torch::equal(layout.slice(wire, i), expected)) << i;
  }

  for (const auto& p : params) p.mutable_grad() = torch::Tensor();
  layout.unpack_gradients(wire, 0.5, params);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const torch::Tensor& g = params[i].grad();
    ASSERT_TRUE(g.defined()) << i;
    EXPECT_EQ(g.scalar_type(), torch::kFloat) << i;
    EXPECT_EQ(g.sizes(), params[i].sizes()) << i;
    const torch::Tensor expected = i == 3 ? torch::zeros_like(params[i]) : params[i].detach();
    EXPECT_TRUE(torch::equal(g, expected)) << i;
  }
}

// One parameter's slice at a time (what a bucket does as gradients arrive) fills the same buffer.
TEST(FlatLayout, PackingOneAtATimeEqualsPackingAll) {
  auto params = mixed_params(3);
  for (const auto& p : params) p.mutable_grad() = p.detach() - 1;
  const FlatLayout layout(params);
  torch::Tensor all = torch::zeros({layout.numel()}), one_by_one = torch::zeros({layout.numel()});
  layout.pack_gradients(params, all);
  for (std::size_t i = params.size(); i-- > 0;) layout.pack_gradient(params[i], i, one_by_one);
  EXPECT_TRUE(torch::equal(all, one_by_one));
}

// A data-parallel exchange through the layout: every rank's gradients, packed, summed by allreduce and
// unpacked with 1/n, equal the mean of the ranks' gradients on every rank.
TEST(FlatLayout, AveragedOverRanksGivesTheMeanGradient) {
  for (int ranks = 1; ranks <= 4; ++ranks) {
    std::vector<std::vector<torch::Tensor>> grads(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r)
      for (const auto& p : mixed_params(10 * r)) grads[static_cast<std::size_t>(r)].push_back(p.detach() * (r + 1));
    test::run_ranks(ranks, [&](sdk::Communicator& comm) {
      auto params = mixed_params(0);
      for (std::size_t i = 0; i < params.size(); ++i)
        params[i].mutable_grad() = grads[static_cast<std::size_t>(comm.rank())][i].clone();
      const FlatLayout layout(params);
      torch::Tensor flat = torch::empty({layout.numel()});
      layout.pack_gradients(params, flat);
      sdk::collective::allreduce(comm, flat);
      layout.unpack_gradients(flat, 1.0 / comm.size(), params);
      for (std::size_t i = 0; i < params.size(); ++i) {
        torch::Tensor mean = torch::zeros_like(params[i]);
        for (const auto& g : grads) mean += g[i];
        EXPECT_TRUE(torch::allclose(params[i].grad(), mean / comm.size())) << "parameter " << i;
      }
    });
  }
}

}  // namespace
}  // namespace gradsweep
