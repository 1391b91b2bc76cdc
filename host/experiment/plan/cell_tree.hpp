#pragma once
// One cell's configuration tree: the experiment's cell sections and launcher (ExperimentFile::cells) with
// a matrix point's values set in it, what the planner validates and resolves (sweep_plan.hpp).
#include "experiment/plan/experiment_file.hpp"
#include "experiment/plan/sweep_matrix.hpp"

#include <yaml-cpp/yaml.h>

#include <string>

namespace gradsweep::experiment {

struct CellTree {
  YAML::Node root;                       // the cell sections and the launcher
  YAML::Node cell{YAML::NodeType::Map};  // the cell sections alone: what `gradsweep train` will read
};

// How a cell's tree is made: cloned from the experiment (quick; clones have no line and column), or from
// the file read again, whose own nodes are edited so that every message can name where a value was written.
enum class Positions { Dropped, Kept };

CellTree cell_tree(const ExperimentFile& experiment, const SweepMatrix& matrix, const MatrixPoint& point,
                   Positions positions);

// The point's axes as "axis=value ..." (or "the base configuration"), for messages that name a cell.
std::string describe_point(const ExperimentFile& experiment, const SweepMatrix& matrix, const MatrixPoint& point);

}  // namespace gradsweep::experiment
