#pragma once
#include <CLI/CLI.hpp>

namespace gradsweep::cli {

// `gradsweep cell-provenance CELL_DIR --start|--end`: writes the cell's provenance.json (provenance.hpp)
// on the machine that runs it. Hidden from --help: the Slurm batch script calls it on the compute node
// around its srun (batch_script.hpp), so that provenance names the node, its CPU/GPU and its libraries,
// not the login node the sweep was submitted from.
void register_provenance_command(CLI::App& app);

}  // namespace gradsweep::cli
