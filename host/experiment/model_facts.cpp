#include "experiment/model_facts.hpp"

#include "comm/host_communicator.hpp"
#include "config/option_schema.hpp"
#include "plugins/plugin_instance.hpp"
#include "services/logging.hpp"
#include "services/step_metrics.hpp"

#include <torch/torch.h>

namespace gradsweep::experiment {

const sdk::ModelInfo& ModelFacts::of(const host::PluginRecord& record, const sdk::Options& options) {
  YAML::Emitter key;
  key << host::to_yaml(options);
  const std::string id = record.path.string() + "\n" + record.name + "\n" + key.c_str();
  if (const auto it = known_.find(id); it != known_.end()) return it->second;

  const torch::NoGradGuard no_grad;
  const auto comm = host::make_local_communicator();
  host::PluginLogger logger("model " + record.name);
  host::StepMetrics metrics;
  const host::ModelInstance model(record, {options, logger, metrics, *comm, torch::Device(torch::kCPU)});
  sdk::ModelInfo info;
  model.call(model->info(&info), "info");
  return known_.emplace(id, info).first->second;
}

}  // namespace gradsweep::experiment
