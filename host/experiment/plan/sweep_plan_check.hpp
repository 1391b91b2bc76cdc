#pragma once
// A planned cell's strategy judged by what its plugin declares (plugins/plugin_declarations.hpp), with
// the facts known before any process starts: the launcher's ranks, the backend the ranks will choose,
// the device, the strategy's options and the model as its plugin resolves it.
#include "config/cell_config.hpp"
#include "plugins/plugin_declarations.hpp"

#include <gradsweep/sdk/model.hpp>
#include <gradsweep/sdk/options.hpp>

namespace gradsweep::experiment {

// `model` may be nullptr (the model plugin refused its options: reported elsewhere).
plugins::PlanVerdict check_planned_strategy(const plugins::PluginRecord& strategy, const config::CellConfig& config,
                                            int nodes, int ranks_per_node, const sdk::Options& options,
                                            const sdk::ModelInfo* model);

}  // namespace gradsweep::experiment
