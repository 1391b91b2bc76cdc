#pragma once
// Resharding (Strategy::on_load_resharded) of per-rank state that a strategy keeps as error feedback or local
// progress (powersgd's residual, topk's velocity and accumulation, diloco's local parameters): what the
// next averaged step uses is (1/N) * sum over the N ranks, so each of the new ranks takes the old ranks'
// mean, which keeps that average as it was whatever the new number of ranks.
#include <gradsweep/sdk/status.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include <torch/serialize/input-archive.h>
#include <torch/torch.h>

#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

namespace gradsweep::strategies {

// Every old rank's archive, in rank order (the host holds them until on_load_resharded returns).
inline std::vector<torch::serialize::InputArchive*> saved_archives(sdk::SavedStates& saved) {
  std::vector<torch::serialize::InputArchive*> archives;
  for (int r = 0; r < saved.world_size(); ++r) archives.push_back(&sdk::saved_state(saved, r));
  return archives;
}

// The element-wise mean of the tensor saved under `key` by each archive, summed in float64 (so the mean
// does not depend on the order of a float32 sum), on the CPU. Throws when the shapes differ.
inline torch::Tensor saved_mean(const std::vector<torch::serialize::InputArchive*>& archives, const std::string& key) {
  if (archives.empty()) throw sdk::Error("no saved state to average '" + key + "' over");
  torch::Tensor sum;
  for (std::size_t r = 0; r < archives.size(); ++r) {
    torch::Tensor value;
    archives[r]->read(key, value);
    if (!sum.defined())
      sum = value.to(torch::kCPU, torch::kDouble).clone();
    else if (value.sizes() != sum.sizes())
      throw sdk::Error("old rank " + std::to_string(r) + " saved '" + key + "' with another shape than rank 0's");
    else
      sum.add_(value.to(torch::kCPU, torch::kDouble));
  }
  return sum.div_(static_cast<double>(archives.size()));
}

// "norm 12.3456789" of `t` (in float64, 9 digits): what a strategy logs of the state it averaged, so that
// a test can check the rule against the old ranks' files.
inline std::string norm_text(const torch::Tensor& t) {
  std::ostringstream text;
  text << "norm " << std::setprecision(9) << t.to(torch::kCPU, torch::kDouble).norm().item<double>();
  return text.str();
}

}  // namespace gradsweep::strategies
