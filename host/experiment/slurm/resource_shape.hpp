#pragma once
// Cells that ask Slurm for the same resources can share one job array; cells that differ in any sbatch
// option cannot (an array has one set of #SBATCH lines). The shape is therefore everything that ends up in
// the script's header: nodes (and an elastic cell's fewest), tasks per node, GPUs, time limit, threads per
// rank, and the launcher.slurm settings.
#include "experiment/launch/launcher.hpp"

#include <string>
#include <vector>

namespace gradsweep::experiment::slurm {

struct ShapeGroup {
  std::string name;                             // "n2x4" / "n1x1-g1-t01h00m00s": readable, a plain token
  std::vector<const runs::PlannedCell*> cells;  // in plan order
};

// Groups `cells` by shape, groups in order of first appearance, cells in plan order within a group.
std::vector<ShapeGroup> group_by_shape(const std::vector<runs::PlannedCell>& cells);

// The readable part of a group's name: n<nodes>x<ranks per node>[-e<min nodes>][-g<gpus>][-t<time>] (time's
// ':' -> h/m/s).
std::string shape_name(const runs::PlannedCell& cell);

}  // namespace gradsweep::experiment::slurm
