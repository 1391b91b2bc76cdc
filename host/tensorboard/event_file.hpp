#pragma once
// TensorBoard event files: scalars per step, and the HParams plugin's records (docs/results.md#tensorboard).
// Nothing here names a protobuf type: the messages are TensorBoard's own (third_party/tensorboard), built
// inside this library only.
#include "tensorboard/record_writer.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace gradsweep::tensorboard {

// An hparam's value as the HParams dashboard types it: a number, a bool or a string.
using HParamValue = std::variant<double, bool, std::string>;
using HParams = std::vector<std::pair<std::string, HParamValue>>;

// One hparam of an experiment and the values its sessions take.
struct HParamAxis {
  std::string name;
  std::vector<HParamValue> values;
};

// The HParams plugin's session statuses (api.proto's Status).
enum class SessionStatus { Success, Failure, Running };

// "events.out.tfevents.<seconds>.<host>.<pid>", as TensorBoard's own writers name their files.
std::string event_file_name();

// The file_version record's event, "brain.Event:2", with which every event file starts.
std::string file_version_event();

// One event file, appended record by record (each flushed). Every method throws std::runtime_error naming
// the file when it cannot be written.
class EventFile {
 public:
  // Creates `dir` and a new event file in it, and writes the file_version record.
  explicit EventFile(const std::filesystem::path& dir);

  // One event at `step` with a simple_value (float32, as TensorBoard stores scalars) per (tag, value).
  void scalars(std::int64_t step, const std::vector<std::pair<std::string, double>>& values);
  // The HParams plugin's session_start_info: this run is one session with these hparams.
  void session_start(const HParams& hparams);
  // The HParams plugin's session_end_info.
  void session_end(SessionStatus status);

  const std::filesystem::path& path() const { return writer_.path(); }

 private:
  RecordWriter writer_;
};

// The whole of an event file holding the HParams plugin's experiment: the hparams a sweep varies and the
// metrics to compare its sessions by (scalar tags). TensorBoard's HParams dashboard lists the sessions of
// every run under its logdir against it.
std::string experiment_file(const std::vector<HParamAxis>& hparams, const std::vector<std::string>& metric_tags);

}  // namespace gradsweep::tensorboard
