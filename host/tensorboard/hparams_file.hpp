#pragma once
// A cell's hparams as a JSON object beside its results, {"name": number | bool | string, ...}: `gradsweep run`
// writes each cell's sweep axes into DIR/cells/<id>/sweep_axes.json, and `gradsweep train` makes them the
// session's hparams, so that the HParams dashboard compares the cells by what the sweep varies.
#include "tensorboard/event_file.hpp"

#include <filesystem>
#include <optional>
#include <string>

namespace gradsweep::tensorboard {

inline constexpr const char* kSweepAxesFile = "sweep_axes.json";

// The file's text for `hparams` (the caller writes it, atomically).
std::string hparams_json(const HParams& hparams);

// The hparams in `file`, or nothing when there is no such file. Throws std::runtime_error naming the file
// when it is not a JSON object of numbers, bools and strings.
std::optional<HParams> read_hparams_file(const std::filesystem::path& file);

}  // namespace gradsweep::tensorboard
