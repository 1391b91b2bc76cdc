#pragma once
#include <CLI/CLI.hpp>

namespace gradsweep::cli {
// `gradsweep bench comm`: collective bandwidth of the MPI backend's algorithms (native, ring) side by
// side, nccl-tests style, under `mpirun -np N`. See docs/measurements/communicators.md.
void register_bench_comm_command(CLI::App& app);
}  // namespace gradsweep::cli
