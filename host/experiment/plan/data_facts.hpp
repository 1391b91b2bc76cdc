#pragma once
// What planning learns about a cell's data before any cell starts: each split (data.train, data.val) opened
// as the ranks will open it (its entries resolved, every shard's header and size checked) and its largest
// token id and width (data/split_facts.hpp), once per sweep however many cells share the split. With the
// model's resolved vocabulary (model_facts.hpp) that refuses a cell whose data the model cannot embed at
// plan time, rather than in every cell at its first step.
#include "config/cell_config.hpp"
#include "config/config_error.hpp"
#include "data/split_facts.hpp"

#include <gradsweep/sdk/model.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gradsweep::experiment {

class DataFacts {
 public:
  // The split's facts. Throws std::runtime_error naming the entry or the file when the split cannot be
  // read: a missing file, a glob matching nothing, a truncated shard or one with a wrong magic. A failure is
  // remembered as well, so a shared split is opened once either way.
  const data::SplitFacts& of(const std::vector<std::filesystem::path>& entries);

 private:
  struct Known {
    std::optional<data::SplitFacts> facts;
    std::string error;
  };
  std::map<std::vector<std::filesystem::path>, Known> known_;
};

// Why the model cannot train on the split named by `key` ("data.train"), or "" when every id fits:
// the file holding the largest id, the id, its width, and the model's vocab_size.
std::string vocabulary_problem(const data::SplitFacts& facts, const std::string& key, const sdk::ModelInfo& model,
                               const std::string& model_name);

// Both splits of a planned cell: each refused where it cannot be read (at data.train / data.val), and where
// `model` (when its plugin answered) lacks a row for an id in it (at model.vocab_size, or the model section
// when the cell does not set it). `node_of(key)` is the cell's node for a key, for file:line:column.
void check_cell_data(const config::CellConfig& config, const sdk::ModelInfo* model, DataFacts& data_facts,
                     const std::function<YAML::Node(const std::string& key)>& node_of, config::Diagnostics& diag);

}  // namespace gradsweep::experiment
