#include "weights/model_import.hpp"

#include "comm/core/host_communicator.hpp"
#include "services/logging.hpp"
#include "services/step_metrics.hpp"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

namespace gradsweep::weights {
namespace fs = std::filesystem;

std::vector<fs::path> hf_weight_files(const fs::path& dir) {
  if (fs::is_regular_file(dir / "model.safetensors")) return {dir / "model.safetensors"};
  const fs::path index = dir / "model.safetensors.index.json";
  if (!fs::is_regular_file(index))
    throw std::runtime_error(dir.string() +
                             " has no model.safetensors (nor model.safetensors.index.json): init_from reads a "
                             "Hugging Face model directory, as save_pretrained or gradsweep export writes it");
  std::ifstream in(index);
  const auto json = nlohmann::json::parse(in, nullptr, false);
  if (!json.is_object() || !json.contains("weight_map") || !json["weight_map"].is_object())
    throw std::runtime_error(index.string() + " has no weight_map object");
  std::set<std::string> files;
  for (const auto& [name, file] : json["weight_map"].items()) {
    if (!file.is_string())
      throw std::runtime_error(index.string() + ": weight_map[\"" + name + "\"] is not a file name");
    files.insert(file.get<std::string>());
  }
  std::vector<fs::path> out;
  for (const auto& f : files) out.push_back(dir / f);
  return out;
}

HfWeights::HfWeights(const fs::path& dir) {
  for (const fs::path& file : hf_weight_files(dir)) {
    files_.push_back(std::make_unique<SafetensorsFile>(file));
    for (const auto& t : files_.back()->tensors()) weights_.tensors.push_back(t);
  }
  if (std::ifstream config(dir / "config.json"); config) {
    std::stringstream text;
    text << config.rdbuf();
    weights_.config_json = text.str();
  }
}

void import_hf_weights(plugins::ModelInstance& model, const fs::path& dir) {
  const plugins::PluginRecord& record = model.record();
  if (!model.has<&sdk::ModelAbi::import_weights>())
    throw std::runtime_error(plugins::lacks_method<&sdk::ModelAbi::import_weights>(record) + ": it cannot start from " +
                             dir.string());
  const HfWeights weights(dir);
  const sdk::Status status = model.status_of<&sdk::ModelAbi::import_weights>(std::string("hf"), weights.weights());
  if (!status.ok) throw std::runtime_error(dir.string() + ": " + status.message);
}

void check_hf_weights(const plugins::PluginRecord& record, const sdk::Options& options, const fs::path& dir) {
  const torch::NoGradGuard no_grad;
  const auto comm = comm::make_local_communicator();
  services::PluginLogger logger("model " + record.name);
  services::StepMetrics metrics;
  plugins::ModelInstance model(record, {options, logger, metrics, *comm, torch::Device(torch::kCPU)});
  import_hf_weights(model, dir);
}

}  // namespace gradsweep::weights
