#pragma once
// `gradsweep check strategy NAME`: the conformance kit for strategy plugins (docs/plugins.md, "Checking
// your strategy"). It trains the strategy in real `gradsweep train` jobs (mpirun) at each rank count on
// the kit's tiny model and corpus and judges, by what the plugin declares for each rank count:
// exact / loss falls and ranks agree (training_properties), resume and deterministic
// (repeat_properties), bad options (option_property) and no hang (hang_property).
#include "conformance/kit_report.hpp"

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace gradsweep::conformance {

struct KitRequest {
  std::string strategy;
  std::vector<std::string> options;  // strategy.KEY=VALUE
  std::vector<int> ranks{1, 2, 3};
  int steps = 8;
  std::filesystem::path cell;  // the kit's cell file; empty: the one beside the binary
  std::filesystem::path keep;  // where to leave the jobs; empty: a temporary directory, removed
  double hang_deadline_seconds = 30;
};

// Throws for what stops the check itself (an unknown strategy, options the host refuses, a reference
// that does not train), with the host's message; a property that fails is a finding, not an exception.
KitReport check_strategy(const KitRequest& request, std::ostream& progress);

}  // namespace gradsweep::conformance
