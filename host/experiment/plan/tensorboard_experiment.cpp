#include "experiment/plan/tensorboard_experiment.hpp"

#include "util/atomic_file.hpp"

#include <tensorboard/hparams_file.hpp>

#include <algorithm>
#include <cmath>
#include <optional>

namespace gradsweep::experiment {
namespace fs = std::filesystem;

namespace {
std::optional<double> as_number(const std::string& text) {
  std::size_t used = 0;
  try {
    const double v = std::stod(text, &used);
    if (used == text.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// The axis's values as text, in cell order, each once.
std::vector<std::string> axis_texts(const runs::SweepPlan& plan, const std::string& axis) {
  std::vector<std::string> texts;
  for (const runs::PlannedCell& cell : plan.cells)
    for (const auto& [name, value] : cell.axes)
      if (name == axis && std::find(texts.begin(), texts.end(), value) == texts.end()) texts.push_back(value);
  return texts;
}

enum class AxisKind { Number, Bool, String };

AxisKind kind_of(const std::vector<std::string>& texts) {
  if (std::all_of(texts.begin(), texts.end(), [](const std::string& t) { return as_number(t).has_value(); }))
    return AxisKind::Number;
  if (std::all_of(texts.begin(), texts.end(), [](const std::string& t) { return t == "true" || t == "false"; }))
    return AxisKind::Bool;
  return AxisKind::String;
}

tensorboard::HParamValue typed(const std::string& text, AxisKind kind) {
  if (kind == AxisKind::Number) return *as_number(text);
  if (kind == AxisKind::Bool) return text == "true";
  return text;
}

AxisKind kind_of_axis(const tensorboard::HParamAxis& axis) {
  if (axis.values.empty()) return AxisKind::String;
  const std::size_t index = axis.values.front().index();
  return index == 0 ? AxisKind::Number : index == 1 ? AxisKind::Bool : AxisKind::String;
}
}  // namespace

std::vector<tensorboard::HParamAxis> typed_axes(const runs::SweepPlan& plan) {
  std::vector<tensorboard::HParamAxis> axes;
  for (const std::string& name : plan.axes) {
    const std::vector<std::string> texts = axis_texts(plan, name);
    const AxisKind kind = kind_of(texts);
    tensorboard::HParamAxis axis{name, {}};
    for (const std::string& t : texts) axis.values.push_back(typed(t, kind));
    axes.push_back(std::move(axis));
  }
  return axes;
}

tensorboard::HParams cell_hparams(const runs::PlannedCell& cell, const std::vector<tensorboard::HParamAxis>& axes) {
  tensorboard::HParams hparams;
  for (const auto& [name, value] : cell.axes) {
    const auto axis = std::find_if(axes.begin(), axes.end(), [&](const auto& a) { return a.name == name; });
    hparams.emplace_back(name, typed(value, axis == axes.end() ? AxisKind::String : kind_of_axis(*axis)));
  }
  return hparams;
}

void write_tensorboard_experiment(const runs::SweepPlan& plan) {
  const std::vector<tensorboard::HParamAxis> axes = typed_axes(plan);
  for (const runs::PlannedCell& cell : plan.cells) {
    fs::create_directories(cell.dir);
    util::write_file_atomically(cell.dir / tensorboard::kSweepAxesFile,
                                tensorboard::hparams_json(cell_hparams(cell, axes)));
  }
  // The metrics the dashboard shows per session: the tags train/tensorboard_log.cpp gives them.
  util::write_file_atomically(
      plan.out_dir / kExperimentEventFile,
      tensorboard::experiment_file(axes, {"val/loss", "train/loss", "throughput/tokens_per_sec", "time/step"}));
}

}  // namespace gradsweep::experiment
