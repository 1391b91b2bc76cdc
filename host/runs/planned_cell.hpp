#pragma once
// One cell of a sweep as plan.json keeps it (plan_file.hpp): where it lives, what it runs, on how many
// nodes and ranks, and its matrix axes. The planner makes them (host/experiment/plan/sweep_plan.hpp), the
// launchers run them, and the analysis reads them back.
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace gradsweep::runs {

// Options of the Slurm launcher, from the experiment file's launcher.slurm section. The local launcher
// ignores them. Values are as written in YAML; a launcher that puts them in a script must quote them.
struct SlurmSettings {
  std::string partition, account, time, qos, constraint;
  int gpus_per_node = 0;           // 0 = do not ask for GPUs
  int cpus_per_task = 0;           // 0 = let Slurm decide
  std::vector<std::string> extra;  // extra "#SBATCH" option lines, e.g. "--mail-type=END"
  int max_concurrent = 0;          // array throttle (--array=...%P); 0 = no cap
  // Shell lines the batch script runs on the node before srun, as written: what a cluster needs to find
  // gradsweep's libraries there (module load, a virtual environment's activation, exports).
  std::vector<std::string> setup;
};

// launcher.name: emulated (launcher_emulated.hpp): the cell's nodes are network namespaces on this machine
// joined by links shaped to `link_bits_per_second` / dilation (docs/cluster.md).
struct EmulatedCluster {
  bool enabled = false;
  std::uint64_t link_bits_per_second = 0;
  double dilation = 1.0;  // 0: `auto`, measured when the cell's cluster comes up
};

// One cell, ready to launch. Everything a launcher needs is here; paths are absolute.
struct PlannedCell {
  std::string id;                     // directory name under DIR/cells
  std::string config_hash;            // 16 hex digits: hash of the fully resolved configuration (cell_id.hpp)
  std::filesystem::path dir;          // DIR/cells/<id>
  std::filesystem::path config_file;  // DIR/cells/<id>/cell.yaml
  // One rank's command: {gradsweep binary, "train", config_file, "--out", dir}. A launcher wraps it in
  // mpirun / srun; command.txt holds the full line it actually ran.
  std::vector<std::string> rank_command;
  int nodes = 1;
  int ranks_per_node = 1;
  // launcher.elastic.min_nodes: the fewest nodes the cell may go on with after losing some; 0 = not elastic
  // (elastic_cell.hpp). Not part of the cell's identity: it changes what happens after a fault, not the run.
  int elastic_min_nodes = 0;
  // The ranks that compute, as the strategy's plan answer declares (sdk::PlanAnswer::computing_ranks; the
  // others, the lowest ranks, only serve): what the trainer splits batches over and the projection models.
  // 0: not recorded (a plan written before gradsweep recorded it).
  int computing_ranks = 0;
  bool cuda = false;         // runtime.device is cuda or cuda:N
  int threads_per_rank = 0;  // 0 = `gradsweep train` decides (cores / ranks on the node)
  int gpus_per_node = 0;
  std::string time_limit;  // Slurm time format ("HH:MM:SS", "D-HH:MM:SS"); "" = none
  std::int64_t steps = 0;  // train.steps, for progress and ETA
  SlurmSettings slurm;
  EmulatedCluster emulated;
  // Matrix axes of this cell in the matrix's order, as (axis name, value as text): "strategy" -> "ring".
  std::vector<std::pair<std::string, std::string>> axes;
  int repeat = 0;  // 0-based repetition index (repeat: seeds)

  int world_size() const { return nodes * ranks_per_node; }
};

// "strategy=ring nodes=2": the cell's axes, for messages and tables.
std::string axes_text(const PlannedCell& cell);

}  // namespace gradsweep::runs
