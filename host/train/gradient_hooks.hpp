#pragma once
// Tells the strategy the moment each parameter's gradient is final during backward, so it can start
// communicating it while backward continues (overlap), as PyTorch DDP and Horovod do.
//
// The hook sits after the parameter's gradient accumulator, i.e. it runs once .grad holds the summed
// gradient. It only fires while armed (the last micro-batch of a step: earlier micro-batches only
// accumulate). Parameters that got no gradient in a step are reported by `finish`, so a strategy sees
// every index exactly once per step, in the order gradients became ready.
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/types.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace gradsweep::train {

// An owning handle on a gradient accumulator: a shared_ptr up to LibTorch 2.1x, an intrusive_ptr since.
using AccumulatorHandle = decltype(torch::autograd::impl::grad_accumulator(std::declval<const torch::Tensor&>()));

// Runs `fn` each time `param`'s gradient accumulator has run (every backward, armed or not). Returns the
// accumulator, which must be kept alive as long as the hook is wanted; null when `param` has none.
AccumulatorHandle add_accumulator_hook(const torch::Tensor& param, std::function<void()> fn);

class GradientHooks {
 public:
  using Callback = std::function<void(std::size_t index)>;

  GradientHooks(const std::vector<torch::Tensor>& params, Callback on_ready);

  void arm();     // before the last micro-batch's backward
  void finish();  // after it: report parameters whose hook did not fire, then disarm

 private:
  void fire(std::size_t index);

  Callback on_ready_;
  std::vector<AccumulatorHandle> accumulators_;  // hooks live as long as these
  std::vector<char> reported_;
  bool armed_ = false;
};

}  // namespace gradsweep::train
