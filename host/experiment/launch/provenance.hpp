#pragma once
// DIR/cells/<id>/provenance.json: what produced a cell's numbers, so that results from different
// machines, builds and days can be told apart:
//
//   {"gradsweep": {"version", "commit", "dirty"}, "libtorch", "open_mpi", "nccl", "cuda",
//    "host", "cpu", "gpu", "start", "end", "load", "cluster"}
//
// "load" (local launcher only): load averages at start and end and the CPU other processes used during
// the run (machine_load.hpp).
//
// The commit is read at run time from the source tree the binary was built from (git describe), and
// falls back to what CMake recorded at configure time when that tree is gone.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace gradsweep::experiment {

// Everything but the times; computed once per process (it runs git and mpirun).
const nlohmann::json& machine_provenance();

// Writes provenance.json with `start` (ISO 8601 UTC) and `end` ("" while the cell runs), atomically.
// `load` (machine_load.hpp), when not null, is stored as "load"; the keys of `extra` (an object, or null)
// are added as they are: "cluster" for a cell on an emulated cluster (launcher_emulated.hpp).
void write_provenance(const std::filesystem::path& cell_dir, const std::string& start, const std::string& end,
                      const nlohmann::json& load = nullptr, const nlohmann::json& extra = nullptr);

// The cell's provenance.json as written, null when there is none or it cannot be read (a crash mid-write
// cannot leave one, but a hand edit can).
nlohmann::json recorded_provenance(const std::filesystem::path& cell_dir);

// The `start` of the cell's provenance.json, "" when there is none. A writer in another process (the Slurm
// batch script runs `gradsweep cell-provenance DIR --start`, then srun, then `... --end`) keeps no start
// time of its own: the end call reads it back from the file.
std::string recorded_start(const std::filesystem::path& cell_dir);

}  // namespace gradsweep::experiment
