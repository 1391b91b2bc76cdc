#pragma once
// Runs cells one after another on this machine, repeats interleaved (run_order.hpp): `mpirun --oversubscribe --bind-to
// none -np N` for N = nodes x ranks_per_node ranks (a plain process for one rank). More ranks than cores is allowed:
// the ranks then share the cores, each with cores / ranks threads (at least one) unless the cell says.
//
// A failing cell is recorded (status failed, with the last error line of its logs) and the next one
// starts, unless fail_fast. When stop_requested turns true (Ctrl-C), the running job gets SIGTERM (then
// SIGKILL after a grace period); the cell is recorded as interrupted and resumes from its checkpoint
// the next time.
#include "experiment/launch/launcher.hpp"

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::experiment {

class LocalLauncher final : public Launcher {
 public:
  std::string name() const override { return "local"; }
  LaunchResult run(const std::vector<runs::PlannedCell>& cells, const LaunchOptions& options,
                   ProgressSink& progress) override;
};

// The full command line for one cell (mpirun ... or the rank command itself); threads per rank chosen
// as described above. Exposed for `gradsweep plan` and the tests.
std::vector<std::string> local_command(const runs::PlannedCell& cell, int threads_per_rank);
int local_threads_per_rank(const runs::PlannedCell& cell);

// `mpirun --oversubscribe --bind-to none -np WORLD -x OMP_NUM_THREADS=THREADS` and the driver's variables
// the ranks need, then `extra_env` (VAR=VALUE, for every rank), then rank_argv; rank_argv alone for one rank.
std::vector<std::string> mpirun_command(int world, int threads, const std::vector<std::string>& rank_argv,
                                        const std::vector<std::string>& extra_env = {});

// Sets OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM) when this process is root and they are unset.
void allow_mpirun_as_root();

// Starts argv in its own process group (so that stopping it reaches mpirun and every rank it started),
// with stdout and stderr appended to `log`. It gets SIGTERM when this thread's process dies (SIGKILL
// included), and mpirun passes that on to its ranks: nothing a driver started outlives it, and an emulated
// cell's mpirun never outlives the owner of its cluster. Call it from the thread that waits for the job
// (the signal follows the thread that forked).
pid_t spawn_job(const std::vector<std::string>& argv, const std::filesystem::path& log);

// A command as one shell line, each argument quoted when needed (command.txt).
std::string shell_line(const std::vector<std::string>& argv);

}  // namespace gradsweep::experiment
