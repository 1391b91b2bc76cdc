#pragma once
// `gradsweep check model NAME`: a model plugin checked against what it declares (docs/plugins.md,
// "Checking your model"). The model is built on the CPU, as planning builds it, with the given options,
// and judged without training: its parameters and their declared count (model_declared_properties),
// units, FLOPs per token, initial loss and output subset; determinism, dropout independent of the batch
// split and the checkpoint round trip (model_repeat_properties).
#include "conformance/kit_report.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace gradsweep::conformance {

struct ModelCheckRequest {
  std::string model;
  std::vector<std::string> options;          // model.KEY=VALUE
  std::vector<std::filesystem::path> paths;  // searched first, then the usual search path
  std::vector<std::filesystem::path> files;  // plugin files loaded before the search
  std::string dropout_key;                   // the option that sets the model's dropout; "" for none
  double dropout = 0.1;                      // set there unless the options set it
  std::uint64_t seed = 1234;                 // as train.seed
};

struct ModelCheckReport {
  std::string model;
  std::vector<std::string> options;  // as checked: the request's, and the dropout the check set
  std::int64_t parameters = 0, vocab_size = 0;
  std::vector<Finding> findings{};
  double seconds = 0;

  bool passed() const;                        // no finding failed
  std::vector<std::string> failures() const;  // the failed checks' names, in order
};

// Throws for what stops the check itself (an unknown model, options the host or the plugin refuses, a
// model that cannot be built or asked for its info); a check that fails is a finding, not an exception.
ModelCheckReport check_model(const ModelCheckRequest& request);

void print_table(const ModelCheckReport& report, std::ostream& out);
nlohmann::json to_json(const ModelCheckReport& report);

}  // namespace gradsweep::conformance
