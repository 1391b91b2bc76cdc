#include "conformance/model_repeat_properties.hpp"

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace gradsweep::conformance {
namespace {

double max_abs_difference(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.sizes() != b.sizes()) return HUGE_VAL;
  return a.numel() == 0 ? 0.0
                        : (a.detach().to(torch::kDouble) - b.detach().to(torch::kDouble)).abs().max().item<double>();
}

// The first tensor of `a` that is not `b`'s bit for bit, as "parameter 'h.0.attn.weight' (max |d| 0.02)";
// "" when all are. `kind` says which list the names come from.
template <class Named>
std::string first_difference(const char* kind, const std::vector<Named>& a, const std::vector<Named>& b) {
  if (a.size() != b.size())
    return std::to_string(a.size()) + " " + kind + "s in one instance, " + std::to_string(b.size()) + " in the other";
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name)
      return std::string(kind) + " " + std::to_string(i) + " is '" + a[i].name + "' and '" + b[i].name + "'";
    if (a[i].tensor.sizes() != b[i].tensor.sizes() || !torch::equal(a[i].tensor, b[i].tensor))
      return std::string(kind) + " '" + a[i].name + "' (max |d| " +
             short_number(max_abs_difference(a[i].tensor, b[i].tensor)) + ")";
  }
  return {};
}

// The training and the evaluation loss of `a` and `b` on the check's batch; "" when both pairs are equal
// bit for bit, else which differs and by how much.
std::string loss_difference(const ModelCheckContext& ctx, const plugins::ModelInstance& a,
                            const plugins::ModelInstance& b) {
  for (const bool training : {true, false}) {
    const torch::Tensor la = loss_of(a, ctx.batch, training, ctx.bench->seed()).detach();
    const torch::Tensor lb = loss_of(b, ctx.batch, training, ctx.bench->seed()).detach();
    if (!torch::equal(la, lb))
      return std::string(training ? "training" : "evaluation") + " loss " + short_number(la.item<double>()) +
             " against " + short_number(lb.item<double>()) + " (|d| " + short_number(max_abs_difference(la, lb)) + ")";
  }
  return {};
}

}  // namespace

Finding check_model_deterministic(const ModelCheckContext& ctx) {
  const char* property = "deterministic";
  const auto a = ctx.bench->build(), b = ctx.bench->build();
  const auto pa = parameters_of(*a), pb = parameters_of(*b);
  if (const std::string d = first_difference("parameter", pa, pb); !d.empty())
    return model_fail(property, d,
                      "two instances built after the same seed differ: draw initial values from LibTorch's default "
                      "generator, which the trainer seeds with train.seed on every rank, not from a generator of "
                      "your own or the clock");
  if (const std::string d = first_difference("buffer", buffers_of(*a), buffers_of(*b)); !d.empty())
    return model_fail(property, d, "two instances built after the same seed hold different buffers");
  // The same instance twice first: a loss that changes between calls is not the other instance's fault.
  if (const std::string d = loss_difference(ctx, *a, *a); !d.empty())
    return model_fail(property, d + ", the same instance asked twice",
                      "the loss of one batch changes from call to call: state kept between forward passes, or "
                      "randomness from a source the host does not seed");
  if (const std::string d = loss_difference(ctx, *a, *b); !d.empty())
    return model_fail(property, d, "two instances with the same parameters give different losses");
  return model_pass(property, std::to_string(pa.size()) + " parameters equal, losses equal, bit for bit");
}

Finding check_model_dropout_split(const ModelCheckContext& ctx) {
  const char* property = "dropout split";
  const auto model = ctx.bench->build();
  const std::uint64_t seed = ctx.bench->seed();
  const torch::Tensor evaluation = loss_of(*model, ctx.batch, false, seed).detach();
  const torch::Tensor training = loss_of(*model, ctx.batch, true, seed).detach();
  if (torch::equal(evaluation, training))
    return model_pass(property, "not applicable: training and evaluation losses are equal, so no dropout is on" +
                                    std::string(ctx.dropout_declared ? " (" + ctx.dropout_key + " is 0)"
                                                                     : " (the model declares no option '" +
                                                                           ctx.dropout_key + "': --dropout-key)"));
  // Each half's loss is the mean over its own positions, and the halves are the same size: the whole
  // batch's gradient is the mean of the halves'. The trainer relies on exactly this for any split.
  const std::int64_t samples = ctx.batch.inputs.size(0), half = samples / 2;
  const auto whole = gradients_of(*model, ctx.batch, seed);
  const auto first = gradients_of(*model, batch_slice(ctx.batch, 0, half), seed);
  const auto second = gradients_of(*model, batch_slice(ctx.batch, half, samples), seed);
  const auto params = parameters_of(*model);
  double worst = 0, scale = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < whole.size(); ++i) {
    const double d = max_abs_difference(whole[i], (first[i] + second[i]) * 0.5);
    if (d > worst) {
      worst = d;
      at = i;
    }
    scale = std::max(scale, whole[i].numel() == 0 ? 0.0 : whole[i].abs().max().item<double>());
  }
  const double relative = scale > 0 ? worst / scale : worst;
  const std::string figure = "max |dgrad| / max |grad| " + short_number(relative) + " between " +
                             std::to_string(samples) + " samples and two halves" +
                             (ctx.dropout_note.empty() ? "" : " (" + ctx.dropout_note + ")");
  // Float32 sums in another order: about 1e-7 relative; a mask drawn again is of the order of the gradient.
  if (relative > 1e-4)
    return model_fail(property, figure + ", worst at '" + params[at].name + "'",
                      "dropout depends on how the batch is split: a mask drawn from the global generator changes "
                      "with the samples beside it; draw it with sdk::SampleDropout, keyed by Batch::sample_ids");
  return model_pass(property, figure);
}

namespace {

// The model's parameters and buffers under the trainer's checkpoint keys (host/train/checkpoint.cpp).
std::string saved_model(const plugins::ModelInstance& model) {
  torch::serialize::OutputArchive archive;
  for (const auto& p : parameters_of(model)) archive.write("param/" + p.name, p.tensor.detach().clone());
  for (const auto& b : buffers_of(model)) archive.write("buffer/" + b.name, b.tensor.detach().clone());
  std::ostringstream bytes;
  archive.save_to(bytes);
  return bytes.str();
}

// Reads them back into `model` as the trainer's resume does; throws naming a key it lacks.
void load_model(const plugins::ModelInstance& model, const std::string& saved) {
  torch::serialize::InputArchive archive;
  std::istringstream bytes(saved);
  archive.load_from(bytes);
  torch::NoGradGuard no_grad;
  const auto restore = [&](const std::string& key, const torch::Tensor& into) {
    torch::Tensor value;
    if (!archive.try_read(key, value)) throw std::runtime_error("the archive has no '" + key + "'");
    into.copy_(value);
  };
  for (const auto& p : parameters_of(model)) restore("param/" + p.name, p.tensor);
  for (const auto& b : buffers_of(model)) restore("buffer/" + b.name, b.tensor);
}

}  // namespace

Finding check_model_save_load(const ModelCheckContext& ctx) {
  const char* property = "save/load";
  const auto saved = ctx.bench->build(), fresh = ctx.bench->build(ctx.bench->seed() + 1);
  const bool seed_matters = !first_difference("parameter", parameters_of(*saved), parameters_of(*fresh)).empty();
  load_model(*fresh, saved_model(*saved));
  const auto params = parameters_of(*saved);
  const auto buffers = buffers_of(*saved);
  if (const std::string d = first_difference("parameter", params, parameters_of(*fresh)); !d.empty())
    return model_fail(property, d, "a parameter read back differs from the one written");
  if (const std::string d = first_difference("buffer", buffers, buffers_of(*fresh)); !d.empty())
    return model_fail(property, d, "a buffer read back differs from the one written");
  if (const std::string d = loss_difference(ctx, *saved, *fresh); !d.empty())
    return model_fail(property, d,
                      "same parameters and buffers, different loss: the model keeps state that a checkpoint does "
                      "not hold; list it in named_buffers()");
  return model_pass(property, std::to_string(params.size()) + " parameters and " + std::to_string(buffers.size()) +
                                  " buffers into an instance built with another seed; losses equal, bit for bit" +
                                  (seed_matters ? "" : " (the seed changed no parameter)"));
}

}  // namespace gradsweep::conformance
