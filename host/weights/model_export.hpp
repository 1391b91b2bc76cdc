#pragma once
// `gradsweep export`: a trained cell's model as files another framework loads. The model plugin is created
// with the cell's resolved options, given rank 0's newest checkpoint (whole parameters: a sharding strategy
// gathers them before it saves), and asked for its weights in the format (SDK 1.5, ModelAbi::export_weights);
// the host writes them: for "hf", config.json and model.safetensors, which transformers' from_pretrained
// loads. The output directory appears whole or not at all.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace gradsweep::weights {

struct ExportRequest {
  std::filesystem::path cell_dir;  // gradsweep train --out, or a sweep's cells/<id>
  std::string format = "hf";
  std::filesystem::path out;
  std::optional<std::int64_t> step;  // a checkpoint's step; default the newest
};

struct ExportResult {
  std::string model;
  std::int64_t step = 0;
  std::size_t tensors = 0;
  std::uint64_t bytes = 0;
};

// Throws std::runtime_error naming what is missing or wrong (no resolved config, no checkpoint, a plugin
// older than SDK 1.5, a parameter the checkpoint lacks or holds in another shape, a format the model has not).
ExportResult export_cell(const ExportRequest& request);

}  // namespace gradsweep::weights
