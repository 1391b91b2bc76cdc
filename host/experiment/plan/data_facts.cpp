#include "experiment/plan/data_facts.hpp"

#include "data/token_split.hpp"

#include <stdexcept>

namespace gradsweep::experiment {

const data::SplitFacts& DataFacts::of(const std::vector<std::filesystem::path>& entries) {
  auto it = known_.find(entries);
  if (it == known_.end()) {
    Known known;
    try {
      known.facts = data::split_facts(data::TokenSplit::open(entries));
    } catch (const std::exception& e) {
      known.error = e.what();
    }
    it = known_.emplace(entries, std::move(known)).first;
  }
  if (!it->second.facts) throw std::runtime_error(it->second.error);
  return *it->second.facts;
}

std::string vocabulary_problem(const data::SplitFacts& facts, const std::string& key, const sdk::ModelInfo& model,
                               const std::string& model_name) {
  if (model.vocab_size <= 0 || facts.max_token < model.vocab_size) return "";
  return std::to_string(model.vocab_size) + " (" + model_name + " as configured) is too small for " + key + ": " +
         facts.max_file.string() + " holds token id " + std::to_string(facts.max_token) + " (" +
         std::to_string(8 * facts.token_bytes) + "-bit ids); set model.vocab_size to at least " +
         std::to_string(facts.max_token + 1) + " (the tokenizer's vocab_size is in the data set's dataset.json)";
}

void check_cell_data(const config::CellConfig& config, const sdk::ModelInfo* model, DataFacts& data_facts,
                     const std::function<YAML::Node(const std::string& key)>& node_of, config::Diagnostics& diag) {
  for (const auto& [key, entries] : {std::pair{"data.train", &config.train_data}, {"data.val", &config.val_data}}) {
    const data::SplitFacts* facts = nullptr;
    try {
      facts = &data_facts.of(*entries);
    } catch (const std::exception& e) {
      const std::string what = e.what();
      const bool missing = what.rfind("no such file", 0) == 0;
      diag.error(node_of(key), key,
                 what + (missing ? " (relative paths are relative to the experiment file; "
                                   "`gradsweep prepare` makes shards)"
                                 : ""));
      continue;
    }
    const std::string problem = model ? vocabulary_problem(*facts, key, *model, config.model_name) : "";
    if (!problem.empty()) diag.error(node_of("model.vocab_size"), "model.vocab_size", problem);
  }
}

}  // namespace gradsweep::experiment
