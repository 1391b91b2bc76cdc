#pragma once
// What a sweep's report compares against: the experiment file's `report` section
// (host/experiment/plan/report_options_reader.hpp reads it) with `gradsweep report --baseline/--target-loss`
// over it.
#include <optional>
#include <string>

namespace gradsweep::runs {

struct ReportOptions {
  std::string baseline;               // "" = the first group of the plan
  std::optional<double> target_loss;  // none = the baseline's median final val loss
};

}  // namespace gradsweep::runs
