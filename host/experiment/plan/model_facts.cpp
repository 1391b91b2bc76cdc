#include "experiment/plan/model_facts.hpp"

#include "comm/core/host_communicator.hpp"
#include "config/option_schema.hpp"
#include "weights/model_import.hpp"
#include "plugins/plugin_instance.hpp"
#include "services/logging.hpp"
#include "services/step_metrics.hpp"

#include <torch/torch.h>

#include <cstdio>
#include <stdexcept>
#include <type_traits>
#include <variant>

namespace gradsweep::experiment {

// The key is asked for once per cell: built from the values directly, as emitting YAML for it cost more
// than the rest of the look-up.
std::string ModelFacts::key_of(const plugins::PluginRecord& record, const sdk::Options& options) {
  std::string id = record.path.string() + "\n" + record.name;
  for (const auto& [key, value] : options.values()) {
    id += "\n" + key + "=" + std::to_string(value.index()) + ":";
    std::visit(
        [&id](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string>) {
            id += std::to_string(v.size()) + ":" + v;  // its length first: no value can read as two
          } else if constexpr (std::is_same_v<T, double>) {
            char text[32];
            std::snprintf(text, sizeof text, "%.17g", v);
            id += text;
          } else {
            id += std::to_string(v);
          }
        },
        value);
  }
  return id;
}

const sdk::ModelInfo& ModelFacts::of(const plugins::PluginRecord& record, const sdk::Options& options) {
  const std::string id = key_of(record, options);
  if (const auto it = known_.find(id); it != known_.end()) return it->second;

  const torch::NoGradGuard no_grad;
  const auto comm = comm::make_local_communicator();
  services::PluginLogger logger("model " + record.name);
  services::StepMetrics metrics;
  const plugins::ModelInstance model(record, {options, logger, metrics, *comm, torch::Device(torch::kCPU)});
  sdk::ModelInfo info;
  model.call<&sdk::ModelAbi::info>(&info);
  return known_.emplace(id, info).first->second;
}

void ModelFacts::check_weights(const plugins::PluginRecord& record, const sdk::Options& options,
                               const std::filesystem::path& dir) {
  const std::string id = key_of(record, options) + "\ninit_from=" + dir.string();
  auto it = weights_checked_.find(id);
  if (it == weights_checked_.end()) {
    std::string refusal;
    try {
      weights::check_hf_weights(record, options, dir);
    } catch (const std::exception& e) {
      refusal = e.what();
    }
    it = weights_checked_.emplace(id, refusal).first;
  }
  if (!it->second.empty()) throw std::runtime_error(it->second);
}

}  // namespace gradsweep::experiment
