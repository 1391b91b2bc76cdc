#include "experiment/plan/sweep_plan_check.hpp"

#include "comm/registry/backend_registry.hpp"
#include "config/comm_choice.hpp"
#include "env/environment.hpp"

#include <cstdlib>
#include <exception>
#include <string>

namespace gradsweep::experiment {
namespace {

// The backend the cell's ranks will choose (train_command.cpp makes the same choice at start-up), and
// what it offers. A choice the ranks would refuse (nccl in a build without it) is theirs to report:
// here it stands for the backend named, judged by its features alone.
std::pair<std::string, sdk::CommFeatures> planned_backend(const config::CellConfig& config, int world) {
  config::CommRequest request;
  request.config_choice = config.comm;
  request.config_file = config.file;
  request.env_choice = env::text("GRADSWEEP_COMM");
  request.device = config.device;
#if defined(GRADSWEEP_WITH_NCCL) && GRADSWEEP_WITH_NCCL
  request.nccl_built = true;
#endif
  request.launched_by_mpi = world > 1;
  std::string backend = "local";
  try {
    backend = config::choose_comm(request).backend;
  } catch (const std::exception&) {
    const std::string& named = request.env_choice.empty() ? config.comm : request.env_choice;
    backend = named == "nccl" ? "nccl" : world > 1 ? "mpi" : "local";
  }
  return {backend, comm::backend_features(backend, world)};
}

}  // namespace

plugins::PlanVerdict check_planned_strategy(const plugins::PluginRecord& strategy, const config::CellConfig& config,
                                            int nodes, int ranks_per_node, const sdk::Options& options,
                                            const sdk::ModelInfo* model) {
  const int world = nodes * ranks_per_node;
  const auto [backend, features] = planned_backend(config, world);
  return plugins::check_strategy_plan(strategy, {world, nodes, ranks_per_node, backend, features, config.device},
                                      options, model);
}

}  // namespace gradsweep::experiment
