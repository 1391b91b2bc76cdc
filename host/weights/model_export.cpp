#include "weights/model_export.hpp"

#include "comm/core/host_communicator.hpp"
#include "config/cell_config.hpp"
#include "config/config_error.hpp"
#include "config/option_schema.hpp"
#include "weights/safetensors_file.hpp"
#include "plugins/plugin_instance.hpp"
#include "plugins/plugin_registry.hpp"
#include "services/logging.hpp"
#include "services/step_metrics.hpp"
#include "util/atomic_file.hpp"

#include <torch/serialize/input-archive.h>
#include <yaml-cpp/yaml.h>

#include <unistd.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace gradsweep::weights {
namespace {
namespace fs = std::filesystem;

// rank-0/step-<N> of the newest N, or of `step`.
fs::path checkpoint_of(const fs::path& cell_dir, std::optional<std::int64_t> step) {
  const fs::path ranks = cell_dir / "checkpoint" / "rank-0";
  std::vector<std::int64_t> steps;
  if (fs::is_directory(ranks))
    for (const auto& e : fs::directory_iterator(ranks)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("step-", 0) == 0 && fs::exists(e.path() / "model.pt")) steps.push_back(std::stoll(name.substr(5)));
    }
  if (steps.empty())
    throw std::runtime_error("no checkpoint in " + ranks.string() +
                             ": export reads rank 0's checkpoint of a trained cell");
  std::sort(steps.begin(), steps.end());
  const std::int64_t chosen = step.value_or(steps.back());
  if (std::find(steps.begin(), steps.end(), chosen) == steps.end())
    throw std::runtime_error("no checkpoint of step " + std::to_string(chosen) + " in " + ranks.string() +
                             " (it holds the newest two)");
  return ranks / ("step-" + std::to_string(chosen));
}

// The model section of config.resolved.yaml: the plugin's name and its options as the cell resolved them.
YAML::Node model_section(const fs::path& cell_dir, std::vector<fs::path>& plugin_paths) {
  const fs::path file = cell_dir / "config.resolved.yaml";
  if (!fs::exists(file))
    throw std::runtime_error("no config.resolved.yaml in " + cell_dir.string() +
                             ": export reads a trained cell's directory (gradsweep train --out DIR, or a sweep's "
                             "cells/<id>)");
  const YAML::Node root = YAML::LoadFile(file.string());
  if (root["plugins"] && root["plugins"]["paths"])
    for (const auto& p : root["plugins"]["paths"]) plugin_paths.emplace_back(p.as<std::string>());
  if (!root["model"] || !root["model"]["name"]) throw std::runtime_error(file.string() + " has no model.name");
  return root["model"];
}

// Copies every parameter from the checkpoint's model archive into the model.
void restore_parameters(plugins::ModelInstance& model, const fs::path& checkpoint) {
  torch::serialize::InputArchive archive;
  archive.load_from((checkpoint / "model.pt").string());
  std::vector<sdk::Parameter> params;
  model.call<&sdk::ModelAbi::parameters>(&params);
  torch::NoGradGuard no_grad;
  for (auto& p : params) {
    torch::Tensor saved;
    if (!archive.try_read("param/" + p.name, saved))
      throw std::runtime_error(checkpoint.string() + " has no parameter '" + p.name + "'");
    if (saved.sizes() != p.tensor.sizes())
      throw std::runtime_error(checkpoint.string() + ": parameter '" + p.name + "' is " + c10::str(saved.sizes()) +
                               " there but " + c10::str(p.tensor.sizes()) + " in the model as configured");
    p.tensor.copy_(saved);
  }
}

}  // namespace

ExportResult export_cell(const ExportRequest& request) {
  std::vector<fs::path> plugin_paths;
  const YAML::Node section = model_section(request.cell_dir, plugin_paths);
  const fs::path checkpoint = checkpoint_of(request.cell_dir, request.step);
  plugins::PluginRegistry registry;
  registry.scan(plugins::PluginRegistry::search_path(plugin_paths));
  const plugins::PluginRecord& record = registry.find(sdk::PluginKind::Model, section["name"].as<std::string>());
  if (!plugins::plugin_has<&sdk::ModelAbi::export_weights>(record))
    throw std::runtime_error(plugins::lacks_method<&sdk::ModelAbi::export_weights>(record) + ": it cannot be exported");
  config::Diagnostics diag((request.cell_dir / "config.resolved.yaml").string());
  const std::vector<sdk::OptionSpec> specs(record.descriptor->options,
                                           record.descriptor->options + record.descriptor->option_count);
  const sdk::Options options = config::resolve_options(section, "model", specs, config::host_keys_of("model"), diag);
  diag.throw_if_any();

  services::PluginLogger logger("model " + record.name);
  services::StepMetrics metrics;
  const std::unique_ptr<comm::HostCommunicator> comm = comm::make_local_communicator();
  plugins::ModelInstance model(record, sdk::PluginContext{options, logger, metrics, *comm, torch::kCPU});
  restore_parameters(model, checkpoint);
  sdk::ExportedWeights weights;
  model.call<&sdk::ModelAbi::export_weights>(request.format, &weights);

  // Staged beside the target and swapped in whole.
  const fs::path staged = request.out.string() + ".staged." + std::to_string(::getpid());
  fs::remove_all(staged);
  fs::create_directories(staged);
  ExportResult result{record.name, std::stoll(checkpoint.filename().string().substr(5)), weights.tensors.size(), 0};
  try {
    result.bytes = write_safetensors(staged / "model.safetensors", weights.tensors);
    util::write_file_atomically(staged / "config.json", weights.config_json + "\n");
    util::replace_directory(staged, request.out);
  } catch (...) {
    fs::remove_all(staged);
    throw;
  }
  return result;
}

}  // namespace gradsweep::weights
