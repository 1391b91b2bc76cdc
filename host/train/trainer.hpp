#pragma once
// Trains one cell on one rank: data -> model -> loss -> backward -> strategy -> optimizer, with
// evaluation, checkpoints and metrics. Which model and which strategy arrive by name from the registry;
// the trainer knows neither.
#include "comm/core/host_communicator.hpp"
#include "config/cell_config.hpp"
#include "plugins/plugin_registry.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace gradsweep::train {

struct TrainRequest {
  config::CellConfig config;
  std::filesystem::path out_dir;  // the cell directory: metrics.jsonl, summary.json, checkpoint/
  bool resume = true;             // continue from out_dir/checkpoint when present
  std::int64_t stop_after = 0;    // > 0: end this invocation after that many steps, as if interrupted
};

// Runs the whole cell and returns the summary it also wrote (rank 0) to out_dir/summary.json.
nlohmann::json train_cell(const TrainRequest& request, const plugins::PluginRegistry& registry,
                          comm::HostCommunicator& comm);

}  // namespace gradsweep::train
