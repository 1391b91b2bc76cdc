#pragma once
// Optimizer helpers shared by every strategy: build the experiment's optimizer over a set of tensors,
// set each step's learning rate, and clip by global norm. Compiled into each plugin (header-only).
#include <gradsweep/sdk/fused_adamw.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include <ATen/ops/_foreach_mul.h>
#include <ATen/ops/_foreach_norm.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <cmath>
#include <memory>
#include <vector>

namespace gradsweep::sdk {

// Builds the optimizer over two groups: `decay` gets the spec's weight decay, `no_decay` none. Strategies
// that update slices of parameters (a shard) split by the parent parameter's shape, not the slice's.
// AdamW is the fused one (fused_adamw.hpp), with LibTorch's AdamW state.
inline std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerSpec& spec,
                                                               const std::vector<torch::Tensor>& decay,
                                                               const std::vector<torch::Tensor>& no_decay) {
  if (spec.kind == OptimizerSpec::Kind::AdamW) {
    auto with_decay = [&](double wd) {
      return std::make_unique<torch::optim::AdamWOptions>(
          torch::optim::AdamWOptions(spec.lr).betas({spec.beta1, spec.beta2}).eps(spec.eps).weight_decay(wd));
    };
    std::vector<torch::optim::OptimizerParamGroup> groups;
    if (!decay.empty()) groups.emplace_back(decay, with_decay(spec.weight_decay));
    if (!no_decay.empty()) groups.emplace_back(no_decay, with_decay(0.0));
    return std::make_unique<FusedAdamW>(groups, torch::optim::AdamWOptions(spec.lr));
  }
  auto with_decay = [&](double wd) {
    return std::make_unique<torch::optim::SGDOptions>(
        torch::optim::SGDOptions(spec.lr).momentum(spec.momentum).weight_decay(wd));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  if (!decay.empty()) groups.emplace_back(decay, with_decay(spec.weight_decay));
  if (!no_decay.empty()) groups.emplace_back(no_decay, with_decay(0.0));
  return std::make_unique<torch::optim::SGD>(groups, torch::optim::SGDOptions(spec.lr));
}

// Weight decay goes to matrices only (dim >= 2); biases, norms' gains and other vectors are not decayed.
inline std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerSpec& spec,
                                                               const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> decay, no_decay;
  for (const auto& p : params) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  return make_optimizer(spec, decay, no_decay);
}

// Bytes held by the optimizer's per-parameter state (AdamW's two moments, SGD's momentum buffer): what
// ZeRO-1 divides by the number of ranks. Zero before the first step, which creates the state.
inline std::uint64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer) {
  std::uint64_t bytes = 0;
  auto add = [&](const torch::Tensor& t) {
    if (t.defined()) bytes += static_cast<std::uint64_t>(t.numel()) * t.element_size();
  };
  for (const auto& [key, state] : optimizer.state()) {
    if (const auto* adam = dynamic_cast<const torch::optim::AdamWParamState*>(state.get())) {
      add(adam->exp_avg());
      add(adam->exp_avg_sq());
      add(adam->max_exp_avg_sq());
    } else if (const auto* sgd = dynamic_cast<const torch::optim::SGDParamState*>(state.get())) {
      add(sgd->momentum_buffer());
    }
  }
  return bytes;
}

inline void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

inline std::vector<torch::Tensor> defined_grads(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> grads;
  grads.reserve(params.size());
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad().detach());
  return grads;
}

// Squared L2 norm over the gradients of `params` (missing gradients count as zero). The norms are taken on
// the gradients' device by one multi-tensor call and read back once: a host sync per tensor would cost
// more than the norms themselves.
inline double local_grad_norm_squared(const std::vector<torch::Tensor>& params) {
  const std::vector<torch::Tensor> grads = defined_grads(params);
  if (grads.empty()) return 0.0;
  std::vector<torch::Tensor> norms = at::_foreach_norm(grads, 2);
  for (auto& n : norms) n = n.to(torch::kDouble);
  return torch::stack(norms).pow(2).sum().item<double>();
}

// Scales gradients so their global norm is at most `max_norm`; returns the norm before scaling.
// `norm_squared` is the global squared norm (strategies that shard gradients sum it over ranks first).
inline double clip_to_norm(const std::vector<torch::Tensor>& params, double norm_squared, double max_norm) {
  const double norm = std::sqrt(norm_squared);
  if (max_norm > 0.0 && norm > max_norm) {
    const double scale = max_norm / (norm + 1e-6);
    std::vector<torch::Tensor> grads = defined_grads(params);
    at::_foreach_mul_(grads, scale);
  }
  return norm;
}

inline std::vector<torch::Tensor> tensors_of(const std::vector<Parameter>& params) {
  std::vector<torch::Tensor> out;
  out.reserve(params.size());
  for (const auto& p : params) out.push_back(p.tensor);
  return out;
}

// ---- Where an optimizer's state lies (for resharding: model_optimizer_state.hpp) ----
// A strategy's optimizer updates tensors that are whole parameters (ring), or slices of them (a ZeRO
// shard). Each is recorded as an OptimizerSlice: elements [offset, offset + numel) of one model
// parameter, flattened; the map is saved beside LibTorch's own optimizer state.
struct OptimizerSlice {
  std::int64_t param = 0;   // model parameter index (StrategySetup::parameters)
  std::int64_t offset = 0;  // first element within the flattened parameter
  std::int64_t numel = 0;
};

// An optimizer and where each of its tensors lies, in the optimizer's own order (decay group, then the
// rest: the order LibTorch saves them in).
struct SlicedOptimizer {
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::vector<OptimizerSlice> slices;

  void save(torch::serialize::OutputArchive& archive) const {
    optimizer->save(archive);
    torch::Tensor map = torch::empty({static_cast<std::int64_t>(slices.size()), 3}, torch::kLong);
    auto rows = map.accessor<std::int64_t, 2>();
    for (std::size_t i = 0; i < slices.size(); ++i) {
      rows[i][0] = slices[i].param;
      rows[i][1] = slices[i].offset;
      rows[i][2] = slices[i].numel;
    }
    archive.write("optimizer_slices", map);
  }
  void load(torch::serialize::InputArchive& archive) { optimizer->load(archive); }
};

// Builds the experiment's optimizer over `tensors`, which lie at `slices` of `parents` (the model's
// parameters): weight decay for slices of matrices, as make_optimizer decides by the parent's shape.
inline SlicedOptimizer make_sliced_optimizer(const OptimizerSpec& spec, const std::vector<torch::Tensor>& tensors,
                                             const std::vector<OptimizerSlice>& slices,
                                             const std::vector<torch::Tensor>& parents) {
  std::vector<torch::Tensor> decay, no_decay;
  SlicedOptimizer made;
  std::vector<OptimizerSlice> rest;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const bool matrix = parents.at(static_cast<std::size_t>(slices.at(i).param)).dim() >= 2;
    (matrix ? decay : no_decay).push_back(tensors[i]);
    (matrix ? made.slices : rest).push_back(slices[i]);
  }
  made.slices.insert(made.slices.end(), rest.begin(), rest.end());
  made.optimizer = make_optimizer(spec, decay, no_decay);
  return made;
}

// Every parameter whole: what an optimizer over all of them (LocalOptimizer) records.
inline std::vector<OptimizerSlice> whole_parameters(const std::vector<torch::Tensor>& params) {
  std::vector<OptimizerSlice> slices;
  for (std::size_t i = 0; i < params.size(); ++i)
    slices.push_back({static_cast<std::int64_t>(i), 0, params[i].numel()});
  return slices;
}

// The optimizer of a strategy that updates every parameter on its own rank (single, allreduce-based
// strategies, local SGD): build it over all parameters, zero gradients, clip by a norm, step, checkpoint.
class LocalOptimizer {
 public:
  void setup(const StrategySetup& setup) {
    params_ = tensors_of(setup.parameters);
    spec_ = setup.optimizer;
    optimizer_ = make_sliced_optimizer(spec_, params_, whole_parameters(params_), params_);
  }
  void zero_grad() { optimizer_.optimizer->zero_grad(); }
  // Clips to the experiment's max norm given the global squared norm (by default this rank's), sets this
  // step's learning rate and applies the update.
  StepResult step(const StepContext& step) { return step_with_norm(step, local_grad_norm_squared(params_)); }
  StepResult step_with_norm(const StepContext& step, double global_norm_squared) {
    StepResult result;
    result.grad_norm = clip_to_norm(params_, global_norm_squared, spec_.grad_clip);
    set_learning_rate(*optimizer_.optimizer, step.lr);
    optimizer_.optimizer->step();
    return result;
  }
  void save(torch::serialize::OutputArchive& archive) { optimizer_.save(archive); }
  void load(torch::serialize::InputArchive& archive) { optimizer_.load(archive); }
  const std::vector<torch::Tensor>& params() const { return params_; }
  const OptimizerSpec& spec() const { return spec_; }
  const torch::optim::Optimizer& optimizer() const { return *optimizer_.optimizer; }
  // What ModelOptimizerState::restore fills when resharding.
  SlicedOptimizer& sliced() { return optimizer_; }

 private:
  std::vector<torch::Tensor> params_;
  OptimizerSpec spec_;
  SlicedOptimizer optimizer_;
};

}  // namespace gradsweep::sdk
