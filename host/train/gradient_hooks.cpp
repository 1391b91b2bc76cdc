#include "train/gradient_hooks.hpp"

#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

namespace gradsweep::train {
namespace {

class ReadyHook final : public torch::autograd::FunctionPostHook {
 public:
  explicit ReadyHook(std::function<void()> fn) : fn_(std::move(fn)) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& /*inputs*/) override {
    fn_();
    return outputs;
  }

 private:
  std::function<void()> fn_;
};

}  // namespace

AccumulatorHandle add_accumulator_hook(const torch::Tensor& param, std::function<void()> fn) {
  auto accumulator = torch::autograd::impl::grad_accumulator(param);
  if (accumulator) accumulator->add_post_hook(std::make_unique<ReadyHook>(std::move(fn)));
  return accumulator;
}

GradientHooks::GradientHooks(const std::vector<torch::Tensor>& params, Callback on_ready)
    : on_ready_(std::move(on_ready)), reported_(params.size(), 0) {
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto accumulator = add_accumulator_hook(params[i], [this, i] { fire(i); });
    if (!accumulator) continue;  // not a leaf that requires grad: reported by finish()
    accumulators_.push_back(std::move(accumulator));
  }
}

void GradientHooks::arm() {
  std::fill(reported_.begin(), reported_.end(), 0);
  armed_ = true;
}

void GradientHooks::fire(std::size_t index) {
  if (!armed_ || reported_[index]) return;
  reported_[index] = 1;
  on_ready_(index);
}

void GradientHooks::finish() {
  for (std::size_t i = reported_.size(); i-- > 0;) fire(i);
  armed_ = false;
}

}  // namespace gradsweep::train
