#include "outer_optimizer.hpp"

#include "number_text.hpp"

#include <gradsweep/sdk/status.hpp>

#include <torch/torch.h>

namespace gradsweep::strategies {

OuterOptimizer::OuterOptimizer(const std::string& strategy, double lr, double momentum, bool nesterov)
    : lr_(lr), momentum_(momentum), nesterov_(nesterov) {
  if (!(lr > 0))
    throw sdk::Error("strategy '" + strategy + "': outer_lr must be > 0, got " + number_text(lr) +
                     " (the paper uses 0.7)");
  if (!(momentum >= 0 && momentum < 1))
    throw sdk::Error("strategy '" + strategy + "': outer_momentum must be in [0, 1), got " + number_text(momentum) +
                     " (the paper uses 0.9)");
}

void OuterOptimizer::setup(const torch::Tensor& like) {
  if (momentum_ > 0) buffer_ = torch::zeros_like(like);
}

void OuterOptimizer::step(torch::Tensor& global, torch::Tensor& delta) {
  torch::NoGradGuard no_grad;
  if (buffer_.defined()) {
    // A zero buffer makes the first step buf = delta, as torch.optim.SGD's clone on its first step.
    buffer_.mul_(momentum_).add_(delta);
    if (nesterov_)
      delta.add_(buffer_, momentum_);
    else
      delta.copy_(buffer_);
  }
  global.sub_(delta, lr_);
}

std::uint64_t OuterOptimizer::state_bytes() const {
  return buffer_.defined() ? static_cast<std::uint64_t>(buffer_.numel()) * buffer_.element_size() : 0;
}

void OuterOptimizer::save(torch::serialize::OutputArchive& archive) const {
  if (buffer_.defined()) archive.write("diloco_outer_momentum", buffer_);
}

void OuterOptimizer::load(torch::serialize::InputArchive& archive) {
  if (!buffer_.defined()) return;
  torch::Tensor saved;
  archive.read("diloco_outer_momentum", saved);
  buffer_.copy_(saved);
}

}  // namespace gradsweep::strategies
