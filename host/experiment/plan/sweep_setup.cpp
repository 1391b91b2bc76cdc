#include "experiment/plan/sweep_setup.hpp"

#include <unistd.h>

namespace gradsweep::experiment {
namespace fs = std::filesystem;

fs::path self_executable() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path("gradsweep") : self;
}

LoadedSweep load_sweep(const fs::path& experiment_file, const std::string& out_dir,
                       const std::vector<std::string>& overrides, std::size_t max_cells, CellFiles cell_files) {
  ExperimentFile experiment = load_experiment_file(experiment_file, overrides);
  plugins::PluginRegistry registry;
  registry.scan(experiment_plugin_path(experiment));
  const fs::path out = out_dir.empty() ? fs::path("runs") / experiment.name : fs::path(out_dir);
  runs::SweepPlan plan = plan_sweep(experiment, out, registry, self_executable(), max_cells, cell_files);
  return {std::move(experiment), std::move(plan)};
}

}  // namespace gradsweep::experiment
