#pragma once
// `model.init_from: DIR`: a run starts from weights saved by Hugging Face transformers (save_pretrained) or
// by `gradsweep export --format hf`. The host maps DIR's safetensors file(s) and hands their tensors to the
// model plugin (SDK 1.6, ModelAbi::import_weights), which knows its own layout; the plugin checks names and
// shapes before it changes anything. Planning runs the same import on a CPU copy of the model, so that a
// directory that does not fit the preset stops the sweep before anything trains.
#include "weights/safetensors_file.hpp"
#include "plugins/plugin_instance.hpp"
#include "plugins/plugin_registry.hpp"

#include <gradsweep/sdk/options.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace gradsweep::weights {

// The safetensors files of a Hugging Face model directory: model.safetensors, or the shards named by
// model.safetensors.index.json. Throws naming the directory when it has neither.
std::vector<std::filesystem::path> hf_weight_files(const std::filesystem::path& dir);

// A Hugging Face model directory as the SDK hands it to a plugin: config.json's text and the tensors of
// every safetensors file, which stay mapped (not copied) while this object lives.
class HfWeights {
 public:
  explicit HfWeights(const std::filesystem::path& dir);
  const sdk::ExportedWeights& weights() const { return weights_; }

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  sdk::ExportedWeights weights_;
};

// Sets `model`'s parameters from `dir`. Throws std::runtime_error naming the directory and what does not
// fit (a plugin older than SDK 1.6, a tensor missing, unexpected or of another shape).
void import_hf_weights(plugins::ModelInstance& model, const std::filesystem::path& dir);

// The plan-time check: the model built on the CPU with `options` takes `dir`'s weights, or this throws.
void check_hf_weights(const plugins::PluginRecord& record, const sdk::Options& options,
                      const std::filesystem::path& dir);

}  // namespace gradsweep::weights
