#pragma once
// DiLoCo's outer optimizer: SGD with (Nesterov) momentum over the flat vector of all parameters, whose
// "gradient" is the outer gradient, the global parameters minus the mean over ranks of the parameters
// each rank reached after its inner steps (Douillard et al. 2023, Algorithm 1).
//
// It is written out on flat tensors rather than built from torch::optim::SGD so that momentum 0 with
// Nesterov is allowed (plain outer SGD, which H = 1 reduces to data-parallel SGD with) and its one
// buffer is checkpointed under a name of its own.
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/types.h>

#include <cstdint>
#include <string>

namespace gradsweep::strategies {

class OuterOptimizer {
 public:
  // Throws sdk::Error naming the option when lr <= 0 or momentum is outside [0, 1).
  OuterOptimizer(const std::string& strategy, double lr, double momentum, bool nesterov);

  // Holds a momentum buffer like `like` (none when momentum is 0).
  void setup(const torch::Tensor& like);
  // buf = momentum * buf + delta; global -= lr * (nesterov ? delta + momentum * buf : buf).
  // `delta` is used as scratch and holds the applied update afterwards.
  void step(torch::Tensor& global, torch::Tensor& delta);

  std::uint64_t state_bytes() const;
  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);

 private:
  double lr_, momentum_;
  bool nesterov_;
  torch::Tensor buffer_;  // undefined when momentum is 0
};

}  // namespace gradsweep::strategies
