// The compressors of `powersgd` and `topk`, in process and against references computed here: PowerSGD's
// low-rank approximation, its warm start and error feedback, and ranks simulated by summing the
// buffers of several instances by hand; DGC's top-k selection, accumulation, momentum correction and
// masking, and the densified sum. Both resume at another number of ranks with the mean of the old ranks'
// error feedback (and Q from rank 0).
#include "dgc_compressor.hpp"       // plugins/strategies/topk
#include "powersgd_compressor.hpp"  // plugins/strategies/powersgd

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <memory>
#include <set>
#include <sstream>

namespace gradsweep::strategies {
namespace {

torch::Tensor random(std::vector<std::int64_t> sizes, std::uint64_t seed) {
  torch::manual_seed(seed);
  return torch::randn(sizes, torch::kFloat);
}

// A matrix of rank `r`: (n x r) times (r x m).
torch::Tensor of_rank(std::int64_t n, std::int64_t m, std::int64_t r, std::uint64_t seed) {
  return torch::mm(random({n, r}, seed), random({r, m}, seed + 1));
}

torch::Tensor flat_of(const std::vector<torch::Tensor>& tensors) {
  std::vector<torch::Tensor> parts;
  for (const auto& t : tensors) parts.push_back(t.reshape({-1}));
  return torch::cat(parts);
}

// One PowerSGD step on one rank: the sums over ranks are the buffers themselves.
torch::Tensor powersgd_step(PowerSgdCompressor& c, torch::Tensor flat) {
  c.prepare(flat);
  c.after_p_sum(flat);
  c.finish(flat, 1);
  return flat;
}

void expect_close(const torch::Tensor& a, const torch::Tensor& b, double tolerance) {
  const double scale = std::max(1.0, b.abs().max().item<double>());
  EXPECT_LT((a - b).abs().max().item<double>(), tolerance * scale);
}

// What a compressor saved, read back as the host reads a checkpoint's strategy.pt.
template <class Compressor>
std::unique_ptr<torch::serialize::InputArchive> saved(const Compressor& compressor) {
  torch::serialize::OutputArchive out;
  compressor.save(out);
  std::ostringstream bytes;
  out.save_to(bytes);
  auto in = std::make_unique<torch::serialize::InputArchive>();
  std::istringstream read(bytes.str());
  in->load_from(read);
  return in;
}

// Pointers to `archives`, rank 0 first: what load_resharded takes.
std::vector<torch::serialize::InputArchive*> pointers(
    const std::vector<std::unique_ptr<torch::serialize::InputArchive>>& archives) {
  std::vector<torch::serialize::InputArchive*> out;
  for (const auto& a : archives) out.push_back(a.get());
  return out;
}

TEST(PowerSgdCompressor, OrthogonaliseColumnsGivesOrthonormalColumnsAndKeepsAZeroColumnZero) {
  torch::Tensor m = random({50, 3}, 1);
  orthogonalise_columns(m);
  expect_close(torch::mm(m.t(), m), torch::eye(3), 1e-5);
  torch::Tensor vanished = torch::zeros({10, 2});
  orthogonalise_columns(vanished);
  EXPECT_TRUE(vanished.eq(0).all().item<bool>()) << vanished;
}

TEST(PowerSgdCompressor, ChoosesMatricesBySizeAndBySaving) {
  // A vector; a 3-D tensor seen as 4 x 128; a matrix below min_compress_size; a 2 x 100 matrix whose rank-2
  // factors (2 + 100) x 2 would be larger than it.
  const std::vector<torch::Tensor> params{torch::zeros({64}), torch::zeros({4, 8, 16}), torch::zeros({8, 8}),
                                          torch::zeros({2, 100})};
  const PowerSgdCompressor c(params, {2, 100, 0});
  EXPECT_FALSE(c.compressed(0));
  EXPECT_TRUE(c.compressed(1));
  EXPECT_FALSE(c.compressed(2));
  EXPECT_FALSE(c.compressed(3));
  EXPECT_EQ(c.p_numel(), 4 * 2);
  EXPECT_EQ(c.q_numel(), 128 * 2);
  EXPECT_EQ(c.dense_numel(), 64 + 64 + 200);
}

TEST(PowerSgdCompressor, ReconstructsAMatrixOfItsRankInOneStep) {
  const torch::Tensor m = of_rank(40, 30, 2, 3);
  PowerSgdCompressor c({m}, {2, 0, 5});
  const torch::Tensor out = powersgd_step(c, m.reshape({-1}).clone());
  expect_close(out.view({40, 30}), m, 1e-4);
  EXPECT_LT(c.error().abs().max().item<double>(), 1e-4 * m.abs().max().item<double>());
}

// Fed the same M again and again (the test removes the error feedback from its input), the warm-started Q
// makes each step one more round of subspace iteration: the approximation approaches the best rank-2 one,
// whose error is the norm of the singular values left out (Eckart-Young).
TEST(PowerSgdCompressor, WarmStartConvergesToTheBestApproximationOfItsRank) {
  const torch::Tensor u = std::get<0>(torch::linalg_qr(random({40, 6}, 7)));
  const torch::Tensor v = std::get<0>(torch::linalg_qr(random({30, 6}, 8)));
  const torch::Tensor singular = torch::tensor({10.0f, 6.0f, 1.0f, 0.5f, 0.25f, 0.1f});
  const torch::Tensor m = torch::mm(u * singular, v.t());
  const double best = singular.narrow(0, 2, 4).norm().item<double>();
  PowerSgdCompressor c({m}, {2, 0, 11});
  double first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    const torch::Tensor out = powersgd_step(c, (m.reshape({-1}) - c.error()).clone());
    const double error = (m - out.view({40, 30})).norm().item<double>();
    if (step == 0) first = error;
    last = error;
  }
  EXPECT_GT(first, best * 1.01) << "a random Q is not already the best subspace";
  EXPECT_LT(last, best * 1.0001);
}

TEST(PowerSgdCompressor, ErrorFeedbackCarriesTheResidualIntoTheNextStep) {
  const torch::Tensor g1 = random({20, 16}, 21), g2 = random({20, 16}, 22), bias = random({16}, 23);
  PowerSgdCompressor c({g1, bias}, {1, 0, 0});
  const torch::Tensor in1 = flat_of({g1, bias});
  const torch::Tensor out1 = powersgd_step(c, in1.clone());
  const torch::Tensor e1 = c.error().clone();
  // residual + approximation == input; the vector is passed exactly and keeps no error.
  expect_close(e1 + out1.narrow(0, 0, 320), in1.narrow(0, 0, 320), 1e-6);
  EXPECT_TRUE(torch::equal(out1.narrow(0, 320, 16), bias));
  EXPECT_GT(e1.norm().item<double>(), 0.1 * g1.norm().item<double>()) << "rank 1 cannot hold a random 20 x 16";
  // The next step compresses g2 + e1, and its residual is what of that the approximation missed.
  const torch::Tensor out2 = powersgd_step(c, flat_of({g2, bias}));
  expect_close(c.error() + out2.narrow(0, 0, 320), g2.reshape({-1}) + e1, 1e-6);
}

// Two ranks simulated: M_a = A + D and M_b = A - D, with A of rank 2. P and Q are sums over ranks, so the
// approximation is of the mean A, which rank 2 holds exactly, though neither rank's own M is low-rank;
// each rank's residual is its own M minus the shared approximation, +D and -D.
TEST(PowerSgdCompressor, SummedFactorsApproximateTheMeanOverRanks) {
  const torch::Tensor a = of_rank(24, 18, 2, 31), d = random({24, 18}, 33);
  const torch::Tensor va = random({18}, 34), vb = random({18}, 35);
  const std::vector<torch::Tensor> shapes{a, va};
  PowerSgdCompressor ra(shapes, {2, 0, 9}), rb(shapes, {2, 0, 9});
  torch::Tensor fa = flat_of({a + d, va}), fb = flat_of({a - d, vb});
  ra.prepare(fa);
  rb.prepare(fb);
  for (torch::Tensor* buffer : {&ra.p(), &ra.dense()}) {
    torch::Tensor& other = buffer == &ra.p() ? rb.p() : rb.dense();
    const torch::Tensor sum = *buffer + other;
    buffer->copy_(sum);
    other.copy_(sum);
  }
  ra.after_p_sum(fa);
  rb.after_p_sum(fb);
  const torch::Tensor q_sum = ra.q() + rb.q();
  ra.q().copy_(q_sum);
  rb.q().copy_(q_sum);
  ra.finish(fa, 2);
  rb.finish(fb, 2);
  EXPECT_TRUE(torch::equal(fa, fb)) << "every rank must apply the same gradient";
  expect_close(fa.narrow(0, 0, 24 * 18).view({24, 18}), a, 1e-4);
  expect_close(fa.narrow(0, 24 * 18, 18), (va + vb) / 2, 1e-6);
  expect_close(ra.error().view({24, 18}), d, 1e-4);
  expect_close(rb.error().view({24, 18}), -d, 1e-4);
}

TEST(PowerSgdCompressor, SavedStateContinuesBitForBit) {
  const torch::Tensor g1 = random({20, 16}, 41), g2 = random({20, 16}, 42);
  PowerSgdCompressor original({g1}, {2, 0, 3}), restored({g1}, {2, 0, 99});
  powersgd_step(original, g1.reshape({-1}).clone());
  torch::serialize::OutputArchive out;
  original.save(out);
  std::ostringstream bytes;
  out.save_to(bytes);
  torch::serialize::InputArchive in;
  std::istringstream read(bytes.str());
  in.load_from(read);
  restored.load(in);  // its own seed no longer matters: Q comes from the checkpoint
  EXPECT_TRUE(torch::equal(powersgd_step(original, g2.reshape({-1}).clone()),
                           powersgd_step(restored, g2.reshape({-1}).clone())));
  EXPECT_TRUE(torch::equal(original.error(), restored.error()));
}

// Three old ranks, each with its own residual (and Q, by its own seed), resumed on a new rank: Q from rank 0,
// the residual the mean of the three (so (1/N) * their sum, which the next mean adds back, is kept).
TEST(PowerSgdCompressor, ReshardedStateTakesQFromRankZeroAndTheMeanOfTheResiduals) {
  const torch::Tensor shape = random({20, 16}, 71), bias = random({16}, 72);
  std::vector<PowerSgdCompressor> old;
  std::vector<std::unique_ptr<torch::serialize::InputArchive>> archives;
  torch::Tensor sum = torch::zeros({20 * 16}, torch::kDouble);
  for (int r = 0; r < 3; ++r) {
    PowerSgdCompressor c({shape, bias}, {1, 0, static_cast<std::uint64_t>(r)});
    powersgd_step(c, flat_of({random({20, 16}, 73 + r), bias}));
    sum += c.error().to(torch::kDouble);
    archives.push_back(saved(c));
    old.push_back(std::move(c));
  }
  PowerSgdCompressor resumed({shape, bias}, {1, 0, 99});
  resumed.load_resharded(pointers(archives));
  EXPECT_TRUE(resumed.started());
  EXPECT_TRUE(torch::equal(resumed.q(), old[0].q()));
  EXPECT_TRUE(torch::equal(resumed.error(), (sum / 3).to(torch::kFloat)));
  EXPECT_FALSE(torch::allclose(resumed.error(), old[0].error()));
}

TEST(DgcCompressor, ReshardedStateIsTheMeanOfTheOldRanksVelocityAndAccumulation) {
  const std::vector<torch::Tensor> params{torch::zeros({40}), torch::zeros({5, 8})};
  torch::Tensor values = torch::zeros({4 + 4}), indices = torch::zeros({4 + 4}, torch::kInt);
  std::vector<std::unique_ptr<torch::serialize::InputArchive>> archives;
  torch::Tensor velocity = torch::zeros({80}, torch::kDouble), accumulation = torch::zeros({80}, torch::kDouble);
  for (int r = 0; r < 3; ++r) {
    DgcCompressor c(params, 10.0, 0.9);
    for (int step = 0; step < 2; ++step) c.select(random({80}, 80 + 10 * r + step), values, indices);
    velocity += c.velocity().to(torch::kDouble);
    accumulation += c.accumulation().to(torch::kDouble);
    archives.push_back(saved(c));
  }
  DgcCompressor resumed(params, 10.0, 0.9);
  resumed.load_resharded(pointers(archives));
  EXPECT_TRUE(torch::equal(resumed.velocity(), (velocity / 3).to(torch::kFloat)));
  EXPECT_TRUE(torch::equal(resumed.accumulation(), (accumulation / 3).to(torch::kFloat)));
  // A wrong size is refused as in load: the checkpoint is of another model.
  DgcCompressor other({torch::zeros({81})}, 10.0, 0.9);
  EXPECT_THROW(other.load_resharded(pointers(archives)), std::exception);
}

TEST(DgcCompressor, KeptIsTheCeilingOfThePercentageAndAtLeastOne) {
  EXPECT_EQ(DgcCompressor::kept(64, 1.0), 1);
  EXPECT_EQ(DgcCompressor::kept(2048, 10.0), 205);
  EXPECT_EQ(DgcCompressor::kept(16448, 1.0), 165);
  EXPECT_EQ(DgcCompressor::kept(100, 100.0), 100);
  EXPECT_EQ(DgcCompressor::kept(3, 50.0), 2);
}

// The k largest |v| of each tensor, by the test's own sort.
std::set<std::int64_t> largest(const torch::Tensor& v, std::int64_t offset, std::int64_t k) {
  const torch::Tensor order = std::get<1>(torch::sort(v.abs(), 0, /*descending=*/true));
  std::set<std::int64_t> out;
  for (std::int64_t i = 0; i < k; ++i) out.insert(order[i].item<std::int64_t>() + offset);
  return out;
}

TEST(DgcCompressor, SendsExactlyTheKLargestOfEachTensorAndKeepsTheRest) {
  const std::vector<torch::Tensor> params{torch::zeros({100}), torch::zeros({10, 20})};
  DgcCompressor c(params, 5.0, 0.0);
  ASSERT_EQ(c.selected(), 5 + 10);
  // Distinct magnitudes, so "the k largest" has one answer.
  const torch::Tensor g =
      (torch::randperm(300, torch::kLong).to(torch::kFloat) + 1) * torch::where(random({300}, 51) > 0, 1.0f, -1.0f);
  torch::Tensor values = torch::zeros({15}), indices = torch::zeros({15}, torch::kInt);
  c.select(g, values, indices);
  std::set<std::int64_t> sent;
  for (std::int64_t i = 0; i < 15; ++i) sent.insert(indices[i].item<std::int64_t>());
  std::set<std::int64_t> expected = largest(g.narrow(0, 0, 100), 0, 5);
  for (std::int64_t i : largest(g.narrow(0, 100, 200), 100, 10)) expected.insert(i);
  EXPECT_EQ(sent, expected);
  EXPECT_TRUE(torch::equal(values, g.index_select(0, indices.to(torch::kLong))));
  // Sent entries leave the accumulation; the rest wait there.
  torch::Tensor rest = g.clone();
  rest.index_fill_(0, indices.to(torch::kLong), 0.0);
  EXPECT_TRUE(torch::equal(c.accumulation(), rest));
}

// Without momentum, nothing is lost: what was sent over the steps plus what still waits is every gradient.
TEST(DgcCompressor, TheUnsentRestAccumulatesUntilItIsSent) {
  DgcCompressor c({torch::zeros({64})}, 10.0, 0.0);
  torch::Tensor values = torch::zeros({7}), indices = torch::zeros({7}, torch::kInt);
  torch::Tensor gradients = torch::zeros({64}), sent = torch::zeros({64});
  for (int step = 0; step < 12; ++step) {
    const torch::Tensor g = random({64}, 60 + step);
    gradients += g;
    c.select(g, values, indices);
    sent.index_add_(0, indices.to(torch::kLong), values);
  }
  expect_close(sent + c.accumulation(), gradients, 1e-5);
}

TEST(DgcCompressor, MomentumCorrectionAccumulatesTheVelocityAndMasksWhatWasSent) {
  const double m = 0.9;
  DgcCompressor c({torch::zeros({50})}, 10.0, m);
  torch::Tensor u = torch::zeros({50}), v = torch::zeros({50});
  torch::Tensor values = torch::zeros({5}), indices = torch::zeros({5}, torch::kInt);
  for (int step = 0; step < 4; ++step) {
    const torch::Tensor g = random({50}, 70 + step);
    u = m * u + g;
    v = v + u;
    const std::set<std::int64_t> expected = largest(v, 0, 5);
    c.select(g, values, indices);
    std::set<std::int64_t> sent;
    for (std::int64_t i = 0; i < 5; ++i) sent.insert(indices[i].item<std::int64_t>());
    EXPECT_EQ(sent, expected) << "step " << step;
    expect_close(values, v.index_select(0, indices.to(torch::kLong)), 1e-6);
    for (std::int64_t i : sent) {
      u[i] = 0;
      v[i] = 0;
    }
    expect_close(c.velocity(), u, 1e-6);
    expect_close(c.accumulation(), v, 1e-6);
  }
}

TEST(DgcCompressor, DensifySumsEveryRanksPart) {
  const torch::Tensor values = torch::tensor({1.0f, 2.0f, 10.0f, 20.0f});
  const torch::Tensor indices = torch::tensor({3, 0, 0, 5}, torch::kInt);  // rank 0: {3, 0}; rank 1: {0, 5}
  torch::Tensor flat = torch::full({6}, 7.0f);
  DgcCompressor::densify(values, indices, 2, flat);
  EXPECT_TRUE(torch::equal(flat, torch::tensor({12.0f, 0.0f, 0.0f, 1.0f, 0.0f, 20.0f})));
}

TEST(DgcCompressor, FullRatioWithoutMomentumSendsTheWholeGradient) {
  const torch::Tensor g = random({40}, 80);
  DgcCompressor c({torch::zeros({8}), torch::zeros({4, 8})}, 100.0, 0.0);
  torch::Tensor values = torch::zeros({40}), indices = torch::zeros({40}, torch::kInt), flat = torch::zeros({40});
  c.select(g, values, indices);
  DgcCompressor::densify(values, indices, 1, flat);
  EXPECT_TRUE(torch::equal(flat, g));
  EXPECT_TRUE(c.accumulation().eq(0).all().item<bool>());
}

TEST(DgcCompressor, DenseWarmUpStepsSendTheVelocityAndLeaveTheAccumulationAlone) {
  DgcCompressor c({torch::zeros({10})}, 10.0, 0.5);
  const torch::Tensor g1 = random({10}, 90), g2 = random({10}, 91);
  torch::Tensor f1 = g1.clone(), f2 = g2.clone();
  c.correct_dense(f1);
  c.correct_dense(f2);
  expect_close(f2, 0.5 * g1 + g2, 1e-6);
  EXPECT_TRUE(c.accumulation().eq(0).all().item<bool>());
}

}  // namespace
}  // namespace gradsweep::strategies
