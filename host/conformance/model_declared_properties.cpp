#include "conformance/model_declared_properties.hpp"

#include "train/unit_events.hpp"

#include <torch/torch.h>

#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

namespace gradsweep::conformance {
namespace {

// Why a parameter cannot be trained or checkpointed as the host does it; "" when it can.
std::string parameter_problem(const sdk::Parameter& p, std::int64_t vocab_size) {
  if (!p.tensor.defined()) return "is undefined";
  if (!p.tensor.is_floating_point()) return "is not a floating-point tensor";
  if (!p.tensor.requires_grad()) return "does not require a gradient (a constant belongs in named_buffers())";
  if (!p.tensor.device().is_cpu()) return "is not on the model's device, the CPU";
  if (p.row_sparse && (p.tensor.dim() != 2 || p.tensor.size(0) < vocab_size))
    return "is marked row_sparse but is " + c10::str(p.tensor.sizes()) +
           ": row-sparse parameters are matrices with a row per vocabulary id";
  return {};
}

}  // namespace

Finding check_model_parameters(const ModelCheckContext& ctx) {
  const char* property = "parameters";
  const auto params = parameters_of(*ctx.bench->build());
  if (params.empty()) return model_fail(property, "0 tensors", "the model lists no parameters: nothing to train");
  std::map<std::string, std::size_t> names;
  std::map<const void*, std::size_t> storage;  // a tied tensor listed twice would be updated twice
  std::size_t row_sparse = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const sdk::Parameter& p = params[i];
    if (p.name.empty())
      return model_fail(property, "parameter " + std::to_string(i), "has no name (checkpoints key by it)");
    if (!names.emplace(p.name, i).second)
      return model_fail(property, "'" + p.name + "'", "two parameters have this name (checkpoints key by it)");
    if (const std::string problem = parameter_problem(p, ctx.info.vocab_size); !problem.empty())
      return model_fail(property, "'" + p.name + "'", problem);
    if (const auto [it, fresh] = storage.emplace(p.tensor.data_ptr(), i); !fresh && p.tensor.numel() > 0)
      return model_fail(
          property, "'" + params[it->second].name + "' and '" + p.name + "'",
          "the same tensor listed twice: list a shared (tied) tensor once, or strategies update it twice");
    row_sparse += p.row_sparse;
  }
  return model_pass(property, std::to_string(params.size()) + " tensors, names unique, " + std::to_string(row_sparse) +
                                  " row-sparse");
}

Finding check_model_parameter_count(const ModelCheckContext& ctx) {
  const char* property = "parameter count";
  std::int64_t counted = 0;
  for (const auto& p : parameters_of(*ctx.bench->build())) counted += p.tensor.numel();
  const std::string figure =
      "declared " + std::to_string(ctx.info.num_parameters) + ", counted " + std::to_string(counted);
  if (counted != ctx.info.num_parameters)
    return model_fail(property, figure,
                      "ModelInfo::num_parameters is not the sum of the parameters' numel (the planner and the "
                      "results report the declared number)");
  return model_pass(property, figure);
}

namespace {

// Records what the model calls around its units in one forward pass.
class RecordingHooks final : public sdk::UnitHooks {
 public:
  sdk::Status before_forward(std::size_t unit) noexcept override {
    calls_ += "begin(" + std::to_string(unit) + ") ";
    return {};
  }
  sdk::Status after_forward(std::size_t unit, const torch::Tensor& output) noexcept override {
    calls_ += "end(" + std::to_string(unit) + ") ";
    outputs_[unit] = output;
    return {};
  }
  const std::string& calls() const { return calls_; }
  const std::map<std::size_t, torch::Tensor>& outputs() const { return outputs_; }

 private:
  std::string calls_;
  std::map<std::size_t, torch::Tensor> outputs_;
};

// "" when unit u's output reaches every parameter of the unit, else the first one it does not reach.
std::string unreached_parameter(const sdk::ModelUnit& unit, const torch::Tensor& output,
                                const std::vector<sdk::Parameter>& params) {
  if (unit.parameters.empty()) return {};
  if (!output.defined() || !output.requires_grad()) return params[unit.parameters.front()].name;
  std::vector<torch::Tensor> inputs;
  for (std::size_t i : unit.parameters) inputs.push_back(params[i].tensor);
  const auto grads = torch::autograd::grad({output}, inputs, {torch::ones_like(output)}, /*retain_graph=*/true,
                                           /*create_graph=*/false, /*allow_unused=*/true);
  for (std::size_t k = 0; k < grads.size(); ++k)
    if (!grads[k].defined()) return params[unit.parameters[k]].name;
  return {};
}

}  // namespace

Finding check_model_units(const ModelCheckContext& ctx) {
  const char* property = "units";
  if (!plugins::plugin_has<&sdk::ModelAbi::units>(ctx.bench->record()))
    return model_pass(property, "not applicable: " + plugins::lacks_method<&sdk::ModelAbi::units>(ctx.bench->record()) +
                                    "; the model is one unit, the root");
  const auto model = ctx.bench->build();
  const auto params = parameters_of(*model);
  std::vector<sdk::ModelUnit> units;
  try {
    units = train::model_units(*model, params.size());  // the trainer's own check: in range, one unit at most
  } catch (const std::exception& e) {
    return model_fail(property, "", e.what());
  }
  if (units.empty())
    return model_pass(property,
                      "none declared: one unit, the root, with all " + std::to_string(params.size()) + " parameters");
  std::size_t in_units = 0;
  std::string expected;
  for (std::size_t u = 0; u < units.size(); ++u) {
    in_units += units[u].parameters.size();
    expected += "begin(" + std::to_string(u) + ") end(" + std::to_string(u) + ") ";
  }
  RecordingHooks hooks;
  model->call<&sdk::ModelAbi::set_unit_hooks>(&hooks);
  loss_of(*model, ctx.batch, /*training=*/true, ctx.bench->seed());  // its graph lives on in the outputs
  model->call<&sdk::ModelAbi::set_unit_hooks>(nullptr);
  if (hooks.calls() != expected)
    return model_fail(property, "called " + (hooks.calls().empty() ? std::string("nothing ") : hooks.calls()),
                      "expected " + expected +
                          "in one forward: unit_calls().begin(u) before unit u's first use of its parameters and "
                          "end(u, x) after its last, once each, in the declared order");
  for (std::size_t u = 0; u < units.size(); ++u)
    if (const std::string name = unreached_parameter(units[u], hooks.outputs().at(u), params); !name.empty())
      return model_fail(property, "unit '" + units[u].name + "'",
                        "the output passed to end(u, x) does not reach its parameter '" + name +
                            "': the host starts a unit's backward when that output's gradient is computed");
  return model_pass(property, std::to_string(units.size()) + " units with " + std::to_string(in_units) +
                                  " parameters, the root " + std::to_string(params.size() - in_units) +
                                  "; each in one unit; hooks called in order");
}

Finding check_model_flops(const ModelCheckContext& ctx) {
  const char* property = "flops per token";
  const auto model = ctx.bench->build();
  const std::int64_t seq_len = ctx.batch.inputs.size(1);
  double flops = 0;
  model->call<&sdk::ModelAbi::flops_per_token>(seq_len, &flops);
  const std::string figure =
      short_number(flops) + " at length " + std::to_string(seq_len) + " (" +
      short_number(flops / static_cast<double>(std::max<std::int64_t>(1, ctx.info.num_parameters))) + " x parameters)";
  if (!std::isfinite(flops) || flops <= 0)
    return model_fail(property, figure, "training FLOPs per token must be positive and finite (the MFU divides by it)");
  return model_pass(property, figure);
}

Finding check_model_initial_loss(const ModelCheckContext& ctx) {
  const char* property = "initial loss";
  if (ctx.info.vocab_size < 2)
    return model_fail(property, "vocab_size " + std::to_string(ctx.info.vocab_size),
                      "ModelInfo::vocab_size must be at least 2");
  const torch::Tensor loss = loss_of(*ctx.bench->build(), ctx.batch, /*training=*/false, ctx.bench->seed());
  if (loss.numel() != 1)
    return model_fail(property, "shape " + c10::str(loss.sizes()),
                      "the loss must be a scalar: the mean over the batch");
  const double value = loss.item<double>(), uniform = std::log(static_cast<double>(ctx.info.vocab_size));
  const std::string figure =
      short_number(value) + " against ln(" + std::to_string(ctx.info.vocab_size) + ") = " + short_number(uniform);
  if (!std::isfinite(value)) return model_fail(property, figure, "the loss is not finite");
  // A fresh model predicts about uniformly; far from ln(V) means a wrong vocabulary, padded rows that
  // take probability, or a sum where the mean belongs.
  if (value < uniform / 2 || value > uniform * 2)
    return model_fail(property, figure,
                      "at initialisation the mean cross-entropy should be near ln(vocab_size) (within a factor of 2)");
  return model_pass(property, figure);
}

Finding check_model_output_subset(const ModelCheckContext& ctx) {
  const char* property = "output subset";
  if (!ctx.info.supports_output_subset)
    return model_pass(property, "not applicable: ModelInfo::supports_output_subset is false");
  const auto model = ctx.bench->build();
  const torch::Tensor full = loss_of(*model, ctx.batch, /*training=*/false, ctx.bench->seed()).detach();
  const sdk::OutputSubset every{torch::arange(ctx.info.vocab_size, torch::kLong), ctx.batch.targets, {}};
  torch::Tensor subset;
  model->call<&sdk::ModelAbi::loss>(ctx.batch, &every, &subset);
  const double a = full.item<double>(), b = subset.item<double>();
  const double relative = std::abs(a - b) / std::max(std::abs(a), 1e-12);
  const std::string figure = "every row: " + short_number(b) + " against the full " + short_number(a);
  if (!(relative <= 1e-5))
    return model_fail(property, figure, "an OutputSubset of every vocabulary row must give the full softmax's loss");
  return model_pass(property, figure);
}

}  // namespace gradsweep::conformance
