#include "cli/train_command.hpp"

#include "comm/host_communicator.hpp"
#include "config/cell_config.hpp"
#include "plugins/plugin_registry.hpp"
#include "services/logging.hpp"
#include "train/trainer.hpp"

#include <spdlog/spdlog.h>

#include <iostream>
#include <memory>

namespace gradsweep::host {
namespace fs = std::filesystem;

namespace {
struct TrainArgs {
  std::string config;
  std::string out;
  std::vector<std::string> overrides;
  bool fresh = false;
  std::int64_t stop_after = 0;
};
}  // namespace

void register_train_command(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "Train one cell (one configuration) on this rank");
  cmd->add_option("config", args->config, "Cell configuration (YAML); see docs/configuration.md")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out,-o", args->out, "Cell directory for metrics.jsonl, summary.json, checkpoint/")->required();
  cmd->add_option("--set", args->overrides, "Override a key: --set train.lr=3e-4 (repeatable)");
  cmd->add_flag("--fresh", args->fresh, "Ignore an existing checkpoint and start from step 0");
  cmd->add_option("--stop-after", args->stop_after,
                  "End after N steps of this invocation without a final checkpoint, as an interruption would "
                  "(for testing resume and for time-sliced allocations)");
  cmd->callback([args] {
    std::unique_ptr<HostCommunicator> comm = make_local_communicator();
    const fs::path out(args->out);
    fs::create_directories(out);
    init_logging(comm->rank(), out / ("rank-" + std::to_string(comm->rank()) + ".log"));
    TrainRequest request{load_cell_config(args->config, args->overrides), out, !args->fresh, args->stop_after};
    PluginRegistry registry;
    registry.scan(PluginRegistry::search_path(request.config.plugin_paths));
    const nlohmann::json summary = train_cell(request, registry, *comm);
    if (summary["status"] != "ok") return;
    if (comm->rank() == 0)
      std::cout << "summary: " << summary["model"].get<std::string>() << " / " << summary["strategy"].get<std::string>()
                << " x" << summary["world_size"] << ": final train loss " << summary["final_train_loss"]
                << ", val loss " << summary["val_loss"] << " (ppl " << summary["val_ppl"] << "), "
                << summary["tokens_per_sec"].get<double>() << " tokens/s, MFU " << summary["mfu"].get<double>()
                << " -> " << (out / "summary.json").string() << std::endl;
  });
}

}  // namespace gradsweep::host
