#pragma once
// The experiment file's launcher section, declared as the host declares its cell keys (a HostOption per key,
// with its type, default, range and help): `launcher`, `launcher.slurm` and `launcher.link`. The planner
// validates against these tables and the generated reference (docs/reference/configuration.md) lists them.
#include "config/option_schema.hpp"

#include <vector>

namespace gradsweep::experiment {

// launcher: {name, dilation, nodes, ranks_per_node, threads}; its `slurm`, `link` and `elastic` are tables of
// their own.
const std::vector<config::HostOption>& launcher_options();
// launcher.slurm: the sbatch options with a value (its lists `extra` and `setup` are read apart).
const std::vector<config::HostOption>& slurm_options();
// launcher.link: an emulated cluster's links.
const std::vector<config::HostOption>& link_options();
// launcher.elastic: a cell that loses nodes goes on with fewer (elastic_cell.hpp).
const std::vector<config::HostOption>& elastic_options();

}  // namespace gradsweep::experiment
