#pragma once
// What a model is once its plugin has resolved its options (a preset's block size, the vocabulary):
// asked of the plugin itself, so that planning judges a cell by the model it will train rather than by
// the keys written in the file. The host reads no plugin's options; the plugin answers through
// ModelAbi::info (sdk/model.hpp).
#include "plugins/plugin_registry.hpp"

#include <gradsweep/sdk/model.hpp>
#include <gradsweep/sdk/options.hpp>

#include <filesystem>
#include <map>
#include <string>

namespace gradsweep::experiment {

class ModelFacts {
 public:
  // The model built on the CPU on one local rank, asked for its info and destroyed; each distinct
  // (plugin, options) once per sweep, however many cells share it. Throws std::runtime_error with the
  // plugin's message when it refuses the options.
  const sdk::ModelInfo& of(const plugins::PluginRecord& record, const sdk::Options& options);
  // Throws, with the plugin's message, unless that model takes the weights of the Hugging Face directory
  // `dir` (model.init_from): imported into a CPU copy, once per (plugin, options, directory).
  void check_weights(const plugins::PluginRecord& record, const sdk::Options& options,
                     const std::filesystem::path& dir);

 private:
  static std::string key_of(const plugins::PluginRecord& record, const sdk::Options& options);

  std::map<std::string, sdk::ModelInfo> known_;
  std::map<std::string, std::string> weights_checked_;  // -> "" or the refusal
};

}  // namespace gradsweep::experiment
