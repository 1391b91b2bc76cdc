#pragma once
// A sweep's side of TensorBoard (docs/results.md#tensorboard): the HParams plugin's experiment at the top
// of DIR, listing the sweep's axes with the values its cells take, and each cell's own axis values in
// DIR/cells/<id>/sweep_axes.json, which `gradsweep train` records as the cell's session hparams. Then
// `tensorboard --logdir DIR` compares the cells by what the sweep varies.
#include "experiment/plan/sweep_plan.hpp"

#include <tensorboard/event_file.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::experiment {

// The experiment's event file in DIR (one name: a rerun replaces it rather than adding a second).
inline constexpr const char* kExperimentEventFile = "events.out.tfevents.0.gradsweep-experiment";

// The axes of the plan, each with its values in cell order without repeats, typed for the dashboard: an
// axis whose every value is a number is numeric, one of only true/false is a bool, any other a string.
std::vector<tensorboard::HParamAxis> typed_axes(const runs::SweepPlan& plan);

// The cell's axis values, typed as typed_axes types their axis.
tensorboard::HParams cell_hparams(const runs::PlannedCell& cell, const std::vector<tensorboard::HParamAxis>& axes);

// Writes DIR/<kExperimentEventFile> and every cell's sweep_axes.json (atomically).
void write_tensorboard_experiment(const runs::SweepPlan& plan);

}  // namespace gradsweep::experiment
