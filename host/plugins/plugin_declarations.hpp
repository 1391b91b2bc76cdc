#pragma once
// What a plugin declares about itself (sdk/capabilities.hpp), read from its descriptor through read_sized
// (sized_struct.hpp: only what the plugin's minor and struct_size cover), and the one plan check that
// the planner and `gradsweep train` share. A plugin built against SDK 1.0-1.3, or declaring nothing, gets
// what the host did before 1.4 (see each function).
#include "config/option_schema.hpp"
#include "plugins/plugin_registry.hpp"

#include <gradsweep/sdk/capabilities.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gradsweep::plugins {

std::vector<sdk::OptionSpec> option_specs(const PluginRecord& record);
// Parallel to option_specs; "" where a key has no declared choices (every key of an older plugin).
config::OptionChoices option_choices(const PluginRecord& record);

// Empty when the plugin declares none. Fields past the plugin's struct_size (appended by a later SDK)
// keep their defaults: only the bytes the plugin wrote are read. Throws, naming the plugin, when its
// struct_size is smaller than its minor promised (the registry refuses such a plugin when it loads it).
std::optional<sdk::StrategyCapabilities> declared_capabilities(const PluginRecord& record);

struct PlanVerdict {
  std::string refusal;  // empty: the cell can run
  std::string about;    // sdk::PlanAnswer::about: "ranks", "backend", "device", "model", an option key, or ""
  // The ranks that compute: the highest `computing_ranks` of the job (the others serve). THE declaration
  // of who computes that the planner, the trainer (rank_duties.hpp) and plan.json carry.
  int computing_ranks = 1;
  // For this cell's options, as check_plan narrowed them; empty when the plugin declares none.
  std::optional<sdk::StrategyCapabilities> capabilities{};
  bool answered = false;  // check_plan ran and answered (computing_ranks is the plugin's, not assumed)
};

// The strategy's check_plan first (its own words win), then its declared world sizes, communicator
// features and devices against `facts`. Without a check_plan every rank computes.
PlanVerdict check_strategy_plan(const PluginRecord& record, const sdk::PlanFacts& facts);

// The job a strategy is judged against: as the planner foresees it, or as `gradsweep train` finds it.
struct PlannedJob {
  int world_size = 1, nodes = 1, ranks_per_node = 1;
  std::string backend;                     // the communicator backend the ranks use: "local", "mpi", "nccl"
  sdk::CommFeatures backend_features = 0;  // what it offers on world_size ranks
  std::string device = "cpu";              // runtime.device
};

// check_strategy_plan on the sdk::PlanFacts of `job`, the strategy's resolved `options` and the model as its
// plugin resolves it (nullptr when not known): the one place the host makes a strategy's PlanFacts.
PlanVerdict check_strategy_plan(const PluginRecord& record, const PlannedJob& job, const sdk::Options& options,
                                const sdk::ModelInfo* model);

// The configuration key a refusal is about, for its file:line:column: "launcher.nodes" or
// "launcher.ranks_per_node" (by `nodes`), "runtime.comm", "runtime.device", "model.name", "strategy.KEY",
// or "strategy.name".
std::string refusal_key(const PlanVerdict& verdict, int nodes);

// Whether the trainer counts the shard's tokens and asks the strategy for a vocabulary every step: what
// it declares for the cell; with nothing declared, every plugin built against SDK 1.2 or later (as before 1.4).
bool asks_for_vocabulary(const PluginRecord& record, const PlanVerdict& verdict);

}  // namespace gradsweep::plugins
