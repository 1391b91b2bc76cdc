#pragma once
// What a model is once its plugin has resolved its options (a preset's block size, the vocabulary):
// asked of the plugin itself, so that planning judges a cell by the model it will train rather than by
// the keys written in the file. The host reads no plugin's options; the plugin answers through
// ModelAbi::info (sdk/model.hpp).
#include "plugins/plugin_registry.hpp"

#include <gradsweep/sdk/model.hpp>
#include <gradsweep/sdk/options.hpp>

#include <map>
#include <string>

namespace gradsweep::experiment {

class ModelFacts {
 public:
  // The model built on the CPU on one local rank, asked for its info and destroyed; each distinct
  // (plugin, options) once per sweep, however many cells share it. Throws std::runtime_error with the
  // plugin's message when it refuses the options.
  const sdk::ModelInfo& of(const host::PluginRecord& record, const sdk::Options& options);

 private:
  std::map<std::string, sdk::ModelInfo> known_;
};

}  // namespace gradsweep::experiment
