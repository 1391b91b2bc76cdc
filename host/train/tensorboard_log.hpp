#pragma once
// A cell's TensorBoard events (docs/results.md#tensorboard): DIR/tensorboard/events.out.tfevents.*, written
// by rank 0 beside metrics.jsonl. Each metrics.jsonl line becomes one event of its numbers; the run is one
// HParams session whose hparams are the cell's sweep axes. TensorBoard output is a convenience: when it
// cannot be written (a full disk, an unwritable directory) one warning names the file and the cell trains
// on without it; metrics.jsonl is unaffected.
#include "config/cell_config.hpp"

#include <tensorboard/event_file.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gradsweep::train {

// The numbers of one metrics.jsonl line as TensorBoard scalars: each numeric (or bool, as 0/1) leaf under
// its tag. A top-level key maps to a group ("loss" -> "train/loss", "time_s" -> "time"), nested keys and
// array indices follow with "/" ("time_s.forward" -> "time/forward"); "step" is the event's step and
// nulls (non-finite numbers) are left out.
std::vector<std::pair<std::string, double>> tensorboard_scalars(const nlohmann::json& line);

// The session's hparams: the sweep axes `gradsweep run` wrote into the cell directory, or for a cell
// trained by hand its strategy, model and main training settings.
tensorboard::HParams cell_hparams(const config::CellConfig& config, int world_size,
                                  const std::filesystem::path& out_dir);

class TensorBoardLog {
 public:
  // Only `enabled` (rank 0 with metrics.tensorboard) writes: the event file and the session's start
  // (cell_hparams of `config` on `world_size` ranks).
  TensorBoardLog(const std::filesystem::path& out_dir, bool enabled, const config::CellConfig& config, int world_size);
  // A session neither finished nor interrupted ended by an error: its end is recorded as a failure.
  ~TensorBoardLog();
  TensorBoardLog(const TensorBoardLog&) = delete;
  TensorBoardLog& operator=(const TensorBoardLog&) = delete;

  // One metrics.jsonl line (null on ranks that write none).
  void write_step(std::int64_t step, const nlohmann::json& line);
  // The session's end: Success after the last step; interrupted runs (--stop-after) record none, since
  // the next run resumes them.
  void finish(std::optional<tensorboard::SessionStatus> status);

 private:
  // Runs `write`; on its first failure warns once, naming what failed, and writes nothing more.
  template <class Write>
  void guarded(Write&& write);
  std::optional<tensorboard::EventFile> file_;
  bool finished_ = false;
};

}  // namespace gradsweep::train
