#pragma once
// The experiment file: a cell configuration (model, data, train, strategy, ...) that is the base of
// every cell, plus the sweep's own sections:
//
//   name: bai2022                  # default: the file's stem; the output goes to runs/<name>
//   description: "..."
//   launcher: {nodes: 1, ranks_per_node: 1, threads: 0, slurm: {partition, account, time, ...}}
//   matrix:  {strategy: [single, ring], nodes: [1, 2, 4], train.micro_batch: [4, 8]}
//   exclude: [{strategy: single, nodes: [2, 4]}]
//   include: [{strategy: ps, strategy.mode: async, nodes: 2}]
//   repeat: 3                      # or {seeds: [1, 2, 3]}, or {count: 3, vary_seed: false}
//   report: {baseline: single, target_loss: 5.2}   # report_options_reader.hpp
//
// Read once into a typed form: the sweep's sections as structs (sweep_sections.hpp), the report's options,
// the plugin paths, and the cell sections with the launcher as one tree, the base that every cell's tree
// is made from (cell_tree.hpp). Every value keeps its node of the file, so its line and column.
// Only the file's shape is checked here (top-level keys, the types of the sweep's sections); the cells
// themselves are validated once expanded (sweep_plan.hpp), against the host's schema and the plugins.
#include "config/config_error.hpp"
#include "experiment/plan/sweep_sections.hpp"
#include "runs/report_options.hpp"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::experiment {

struct ExperimentFile {
  std::filesystem::path file;      // absolute
  std::filesystem::path base_dir;  // relative paths in the file are resolved against it
  std::string name;
  std::string description;
  std::string text;                    // the file as read
  std::vector<std::string> overrides;  // --set, applied to the whole file (matrix.* included)
  // The cell sections and the launcher, as written with the overrides applied: the parsed file without
  // the sweep's own sections.
  YAML::Node cells;
  SweepSections sweep;                              // matrix, exclude, include, repeat
  runs::ReportOptions report;                       // report
  std::vector<std::filesystem::path> plugin_paths;  // plugins.paths, relative ones against base_dir
  // Problems of the file's top level (unknown keys, sections of the wrong shape), reported together
  // with those of the cells by plan_sweep rather than alone.
  std::vector<std::string> problems;

  // The same file read again into fresh nodes: a cell whose tree is this copy's, edited in place, keeps
  // every value's line and column (a clone of `cells` has none).
  ExperimentFile reread() const;
};

// The sweep's own top-level keys, which a cell configuration does not have.
const std::vector<std::string>& sweep_keys();
// The sections of a cell configuration.
const std::vector<std::string>& cell_sections();

// Reads the file and checks its top level (ExperimentFile::problems); throws config::ConfigError only when
// it cannot be read or parsed.
ExperimentFile load_experiment_file(const std::filesystem::path& file, const std::vector<std::string>& overrides);

}  // namespace gradsweep::experiment
