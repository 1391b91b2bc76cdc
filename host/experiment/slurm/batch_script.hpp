#pragma once
// The sbatch script of one job array: every cell of one resource shape, one array task per cell.
//
// Two files are written side by side in DIR/slurm/:
//   <name>.sbatch   the batch script: #SBATCH options, then a small bash body
//   <name>.cells    the array's cells, one line per task index: "<cell id>\t<config hash>\t<cell dir>"
// Array task i reads line i+1 of the cells file, marks the cell running, writes its provenance.json
// (`gradsweep cell-provenance`, on the compute node; an elastic cell's with the nodes this run was given), runs
//   srun --mpi=pmix <gradsweep> train <cell dir>/cell.yaml --out <cell dir> [--set runtime.threads=N]
// (appending to the cell's launcher.log), records the end time in provenance.json and writes the cell's
// status.json from srun's exit code and summary.json. A requeued task runs the same line again, and `gradsweep train`
// resumes from the cell's checkpoint. A task that Slurm kills (scancel, time limit) never reaches the end of the
// script: the launcher following the array fills in its status from Slurm's accounting (slurm_launcher.hpp).
//
// No value from the experiment file is pasted into the script unchecked (shell_quote.hpp): names and
// numbers are validated, paths are single-quoted, and the cells file is read as data (read -r, "$var").
#include "experiment/launch/launcher.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::experiment::slurm {

// One array task: the cell it trains.
struct ArrayTask {
  std::string cell_id;      // plain token: directory name under DIR/cells
  std::string config_hash;  // plain token: written to status.json
  std::filesystem::path cell_dir;
};

// What all tasks of the array share: the resource shape and the sbatch settings.
struct BatchArray {
  std::string name;  // plain token: file names and --job-name=gradsweep-<name>
  int nodes = 1;
  // launcher.elastic.min_nodes. Between 1 and `nodes` - 1 the array asks for a range, --nodes=min_nodes-nodes
  // (elastic_runs.hpp); 0 (or `nodes`): exactly `nodes`.
  int min_nodes = 0;
  int ranks_per_node = 1;                  // --ntasks-per-node (srun's, in an elastic array)
  int gpus_per_node = 0;                   // 0 = no --gpus-per-node line
  int threads_per_rank = 0;                // 0 = SLURM_CPUS_PER_TASK when set, else `gradsweep train` decides
  std::string time_limit;                  // "" = no --time line (the partition's default)
  runs::SlurmSettings settings;            // partition, account, qos, constraint, cpus, extra, max_concurrent
  std::filesystem::path gradsweep_binary;  // absolute
  std::filesystem::path script_dir;        // DIR/slurm: the script, the cells file and the array's logs
  std::vector<ArrayTask> tasks;

  std::filesystem::path script_file() const { return script_dir / (name + ".sbatch"); }
  std::filesystem::path cells_file() const { return script_dir / (name + ".cells"); }
  bool elastic() const { return min_nodes > 0 && min_nodes < nodes; }
};

// The script's text. Throws std::invalid_argument naming the key for a value that cannot be put in a
// script safely (a partition with a space, a time that is not a Slurm time, a line break, ...).
std::string batch_script_text(const BatchArray& array);

// The cells file's text (the same checks on ids, hashes and directories).
std::string cells_file_text(const BatchArray& array);

// Writes both files atomically (the script executable) and returns the script's path.
std::filesystem::path write_batch_array(const BatchArray& array);

// "0-K" or "0-K%P": the --array value.
std::string array_range(std::size_t tasks, int max_concurrent);

// The line one task runs, for the cell's command.txt: srun --mpi=pmix '<gradsweep>' train '<cfg>' --out '<dir>'
// [--set runtime.threads=N].
std::string task_command_line(const BatchArray& array, const std::filesystem::path& cell_dir);

}  // namespace gradsweep::experiment::slurm
