#pragma once
// The experiment file's `report` section, which steers the comparison in report.md:
//
//   report:
//     baseline: single        # the cell group the others are compared with (comparison.hpp)
//     target_loss: 5.2        # validation loss for time-to-target; default: the baseline's final val loss
//
// `gradsweep report DIR --baseline ... --target-loss ...` overrides both.
#include "config/config_error.hpp"
#include "runs/report_options.hpp"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <optional>
#include <string>

namespace gradsweep::experiment {

// Reads and checks root["report"]; problems go to `diag` with the key's line and column.
runs::ReportOptions parse_report_options(const YAML::Node& root, config::Diagnostics& diag);

// The `report` section of DIR/experiment.yaml (the copy `gradsweep run` keeps, with its --set lines);
// empty options when there is none. Throws config::ConfigError when the section is malformed.
runs::ReportOptions read_report_options(const std::filesystem::path& out_dir);

}  // namespace gradsweep::experiment
