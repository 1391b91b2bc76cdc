#pragma once
// The configuration of one training run ("cell"): what `gradsweep train` reads.
//
//   model:    {name: gpt2, <the model plugin's options>}
//   strategy: {name: single, <the strategy plugin's options>}
//   data:     {train: SPLIT, val: SPLIT}   a shard, a directory of shards, a glob, or a list of these
//   train:    {steps, batch_size, micro_batch, seq_len, optimizer, lr, ...}
//   eval:     {every, batches}
//   checkpoint: {every}
//   metrics:  {log_every, peak_flops, trace, kernel_profile, tensorboard}
//   runtime:  {threads, device, comm}
//   tracking: {mlflow}
//   plugins:  {paths: [DIR, ...]}
//
// The host's sections are validated here; the model and strategy sections are validated against their
// plugins' declared options once the plugins are found (plugins/plugin_options.hpp).
#include "config/comm_choice.hpp"
#include "config/config_error.hpp"
#include "config/option_schema.hpp"

#include <gradsweep/sdk/optimizer_spec.hpp>
#include <gradsweep/sdk/options.hpp>

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace gradsweep::config {

// The strategy of a cell without a strategy section: the one place the host names a plugin.
inline constexpr const char* kDefaultStrategy = "single";

// The values of the host's keys: every field without a default of its own, since each is filled from the
// one typed table (cell_keys.hpp), which says each key's default, range and help.
struct TrainSettings {
  std::int64_t steps{};
  std::int64_t batch_size{};   // sequences per optimizer step, over all ranks
  std::int64_t micro_batch{};  // sequences per rank per forward/backward
  std::int64_t seq_len{};
  std::int64_t warmup_steps{};
  double min_lr{};
  std::int64_t seed{};
  sdk::OptimizerSpec optimizer;
};

// runtime.device names a CUDA device: "cuda" or "cuda:N".
inline bool is_cuda_device(const std::string& device) { return device.rfind("cuda", 0) == 0; }

struct CellConfig {
  std::string file;  // where it came from, for messages
  YAML::Node root;   // as written, after --set overrides
  std::string model_name;
  // model.init_from made absolute: a Hugging Face model directory to start from; empty: the plugin's own
  // initialisation (weights/model_import.hpp).
  std::filesystem::path init_from;
  std::string strategy_name;
  // data.train / data.val as written, relative paths made absolute against the file's directory: one
  // entry, or the list's entries in order. Which shards they name is data::resolve_split_paths's rule.
  std::vector<std::filesystem::path> train_data, val_data;
  TrainSettings train;
  std::int64_t eval_every{}, eval_batches{};
  std::int64_t checkpoint_every{};
  std::int64_t log_every{};
  double peak_flops{};            // 0 = measure
  std::string trace;              // which steps train/timeline.hpp traces: sampled, all or off
  std::int64_t kernel_profile{};  // steps after the first profiled by kernel class (0 = off)
  bool tensorboard{};             // TensorBoard event files beside metrics.jsonl (train/tensorboard_log.hpp)
  std::string mlflow_uri;         // tracking.mlflow: an MLflow server, empty = off (train/mlflow_log.hpp)
  std::int64_t threads{};         // 0 = cores / ranks on this node
  std::string device;
  bool tf32{};               // float32 matmuls on TF32 tensor cores (CUDA only); runtime.tf32 resolved
  std::string comm;          // communicator backend asked for: auto, local, mpi or nccl (see comm_choice.hpp)
  bool check_collectives{};  // every rank's collectives compared (comm/forensics/collective_fingerprint.hpp)
  double comm_timeout{};     // seconds; see comm/forensics/collective_timeout.hpp
  std::vector<std::filesystem::path> plugin_paths;
  // Every host section with defaults filled in, for the resolved config.
  YAML::Node resolved;
};

// Reads and validates a cell configuration. `overrides` are "dotted.key=value" (YAML scalar values).
// Relative data and plugin paths are resolved against the file's directory. Throws ConfigError listing
// every problem found.
CellConfig load_cell_config(const std::filesystem::path& file, const std::vector<std::string>& overrides = {});
CellConfig parse_cell_config(const std::string& yaml_text, const std::string& file_name,
                             const std::filesystem::path& base_dir, const std::vector<std::string>& overrides = {});
// The same on a tree already parsed (planning builds cells as trees); `root` is edited by the overrides.
CellConfig parse_cell_tree(const YAML::Node& root, const std::string& file_name, const std::filesystem::path& base_dir,
                           const std::vector<std::string>& overrides = {});

// Applies "a.b.c=value" to a YAML tree (creating maps as needed); throws on a malformed override.
void apply_override(YAML::Node& root, const std::string& assignment);

// The keys of a plugin's section that the host reads itself (the rest are the plugin's options): the
// plugin's name, and the model's init_from.
const std::set<std::string>& host_keys_of(const std::string& section);

// The host's own keys by section, with their ranges (for docs and tests: every number has a range).
const std::map<std::string, std::vector<HostOption>>& host_options();

// Refuses more LibTorch threads per rank than a small multiple of this machine's hardware threads.
void check_threads_fit_machine(std::int64_t threads, const YAML::Node& where, const std::string& key,
                               Diagnostics& diag);

}  // namespace gradsweep::config
