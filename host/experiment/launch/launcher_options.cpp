#include "experiment/launch/launcher_options.hpp"

namespace gradsweep::experiment {
using sdk::OptionType;

const std::vector<config::HostOption>& launcher_options() {
  static const std::vector<config::HostOption> options{
      {{"name", OptionType::String, "local", "local (mpirun on this machine) or emulated (emulated_cell.hpp)"}},
      {{"dilation", OptionType::String, "1", "emulated: time-dilation factor >= 1, or auto"}},
      {{"nodes", OptionType::Int, "1", "nodes per cell"}, {1, 1e5}, nullptr, "nodes"},
      {{"ranks_per_node", OptionType::Int, "1", "MPI ranks per node"}, {1, 1024}, nullptr, "ranks"},
      {{"threads", OptionType::Int, "0",
        "LibTorch threads per rank (0 = cores / ranks on the node); at most 4 x the hardware threads of the machine "
        "that validates it"},
       {0, 1024},
       nullptr,
       "threads"}};
  return options;
}

const std::vector<config::HostOption>& slurm_options() {
  static const std::vector<config::HostOption> options{
      {{"partition", OptionType::String, "", "sbatch --partition"}},
      {{"account", OptionType::String, "", "sbatch --account"}},
      {{"time", OptionType::String, "", "sbatch --time, per cell"}},
      {{"qos", OptionType::String, "", "sbatch --qos"}},
      {{"constraint", OptionType::String, "", "sbatch --constraint"}},
      {{"gpus_per_node", OptionType::Int, "0", "sbatch --gpus-per-node"}, {0, 1024}, nullptr, "GPUs"},
      {{"cpus_per_task", OptionType::Int, "0", "sbatch --cpus-per-task"}, {0, 1e5}, nullptr, "CPUs"},
      {{"max_concurrent", OptionType::Int, "0", "array tasks running at once (--array=...%N); 0 = no cap"},
       {0, 1e6},
       nullptr,
       "tasks"}};
  return options;
}

const std::vector<config::HostOption>& link_options() {
  static const std::vector<config::HostOption> options{
      {{"bandwidth", OptionType::String, "", "each node's link rate in each direction: 100mbit, 1Gbit, 10Gbit"}}};
  return options;
}

const std::vector<config::HostOption>& elastic_options() {
  static const std::vector<config::HostOption> options{
      {{"min_nodes", OptionType::Int, "0",
        "the fewest nodes a cell may go on with after losing some (at most launcher.nodes; 0 = not elastic: a lost "
        "node fails the cell)"},
       {0, 1e5},
       nullptr,
       "nodes"}};
  return options;
}

}  // namespace gradsweep::experiment
