#pragma once
// Loads a built plugin as the host does (registry, descriptor checks, option validation) and creates it.
#include <gradsweep/sdk/model.hpp>
#include <gradsweep/sdk/strategy.hpp>

#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

namespace gradsweep::test {

class LoadedModel {
 public:
  virtual ~LoadedModel() = default;
  virtual sdk::ModelAbi* operator->() = 0;
  sdk::ModelInfo info();
  std::vector<sdk::Parameter> parameters();
  torch::Tensor loss(const sdk::Batch& batch, const sdk::OutputSubset* subset = nullptr);
  double flops_per_token(std::int64_t seq_len);
  void set_training(bool training);
};

// `options_yaml` is the plugin's option mapping, e.g. "preset: gpt2-tiny\ndropout: 0.0". Throws with the
// plugin's message if options are invalid or creation fails.
std::shared_ptr<LoadedModel> load_model(const std::string& name, const std::string& options_yaml,
                                        torch::Device device = torch::kCPU);

}  // namespace gradsweep::test
