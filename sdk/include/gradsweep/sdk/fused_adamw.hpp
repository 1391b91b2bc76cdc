#pragma once
// AdamW whose update is one fused kernel per parameter group (at::_fused_adamw_: a multi-tensor kernel on
// CUDA, a vectorised multi-threaded loop on CPU) instead of LibTorch's chain of eight elementwise calls per
// parameter, each a pass over memory and, on a GPU, a kernel launch. Its state is LibTorch's own
// (AdamWParamState, keyed as AdamW keys it), so checkpoints, save/load and optimizer_state_bytes are those
// of torch::optim::AdamW, and the two can take over from each other between steps.
#include <ATen/ops/_fused_adamw.h>
#include <torch/optim/adamw.h>

#include <memory>
#include <tuple>
#include <utility>
#include <vector>

namespace gradsweep::sdk {

class FusedAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;

  torch::Tensor step(LossClosure closure = nullptr) override {
    // The fused kernel reads dense, contiguous tensors whose gradient has the parameter's dtype; anything
    // else (a sparse gradient, a strided view) takes LibTorch's own path, which computes the same update.
    if (!fusable()) return torch::optim::AdamW::step(std::move(closure));
    torch::NoGradGuard no_grad;
    torch::Tensor loss;
    if (closure != nullptr) {
      torch::AutoGradMode enable_grad(true);
      loss = closure();
    }
    for (auto& group : param_groups_) step_group(group);
    return loss;
  }

 private:
  bool fusable() const {
    for (const auto& group : param_groups_)
      for (const auto& p : group.params()) {
        const auto& g = p.grad();
        if (!g.defined()) continue;
        if (g.is_sparse() || !p.is_contiguous() || !g.is_contiguous() || g.scalar_type() != p.scalar_type() ||
            g.device() != p.device())
          return false;
      }
    return true;
  }

  static torch::Tensor step_tensor(std::vector<std::tuple<std::int64_t, torch::Device, torch::Tensor>>& made,
                                   std::int64_t step, const torch::Device& device) {
    for (const auto& [s, d, t] : made)
      if (s == step && d == device) return t;
    made.emplace_back(step, device,
                      torch::full({}, static_cast<double>(step), torch::dtype(torch::kFloat).device(device)));
    return std::get<2>(made.back());
  }

  void step_group(torch::optim::OptimizerParamGroup& group) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps;
    // The kernel reads each parameter's step count from a float tensor on its device; parameters at the
    // same count on the same device share one (in practice one per group).
    std::vector<std::tuple<std::int64_t, torch::Device, torch::Tensor>> step_tensors;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& slot = state_[p.unsafeGetTensorImpl()];
      if (!slot) {
        auto fresh = std::make_unique<torch::optim::AdamWParamState>();
        fresh->step(0);
        fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        if (o.amsgrad()) fresh->max_exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        slot = std::move(fresh);
      }
      auto& state = static_cast<torch::optim::AdamWParamState&>(*slot);
      state.step(state.step() + 1);
      params.push_back(p);
      grads.push_back(p.grad());
      exp_avgs.push_back(state.exp_avg());
      exp_avg_sqs.push_back(state.exp_avg_sq());
      if (o.amsgrad()) max_exp_avg_sqs.push_back(state.max_exp_avg_sq());
      steps.push_back(step_tensor(step_tensors, state.step(), p.device()));
    }
    if (params.empty()) return;
    const auto [beta1, beta2] = o.betas();
    at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, o.lr(), beta1, beta2,
                      o.weight_decay(), o.eps(), o.amsgrad(), /*maximize=*/false);
  }
};

}  // namespace gradsweep::sdk
