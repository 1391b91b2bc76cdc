#include "tensorboard/event_file.hpp"

#include "tensorboard/hparams_summary.hpp"

#include "tensorboard/compat/proto/event.pb.h"

#include <unistd.h>

#include <chrono>
#include <climits>
#include <system_error>

namespace gradsweep::tensorboard {
namespace fs = std::filesystem;
namespace pb = ::tensorboard;

namespace {
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

std::string summary_event(std::int64_t step, pb::Summary summary) {
  pb::Event event;
  event.set_wall_time(now_seconds());
  event.set_step(step);
  *event.mutable_summary() = std::move(summary);
  return event.SerializeAsString();
}

fs::path created(const fs::path& dir) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error)
    throw std::runtime_error("cannot create the TensorBoard directory " + dir.string() + ": " + error.message());
  return dir / event_file_name();
}
}  // namespace

std::string event_file_name() {
  const auto seconds = static_cast<long long>(now_seconds());
  return "events.out.tfevents." + std::to_string(seconds) + "." + host_name() + "." + std::to_string(::getpid());
}

std::string file_version_event() {
  pb::Event event;
  event.set_wall_time(now_seconds());
  event.set_file_version("brain.Event:2");
  return event.SerializeAsString();
}

EventFile::EventFile(const fs::path& dir) : writer_(created(dir)) { writer_.write(file_version_event()); }

void EventFile::scalars(std::int64_t step, const std::vector<std::pair<std::string, double>>& values) {
  pb::Summary summary;
  for (const auto& [tag, value] : values) {
    pb::Summary::Value* v = summary.add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  writer_.write(summary_event(step, std::move(summary)));
}

void EventFile::session_start(const HParams& hparams) {
  writer_.write(summary_event(0, session_start_summary(hparams, now_seconds())));
}

void EventFile::session_end(SessionStatus status) {
  writer_.write(summary_event(0, session_end_summary(status, now_seconds())));
}

std::string experiment_file(const std::vector<HParamAxis>& hparams, const std::vector<std::string>& metric_tags) {
  return frame_record(file_version_event()) +
         frame_record(summary_event(0, experiment_summary(hparams, metric_tags, now_seconds())));
}

}  // namespace gradsweep::tensorboard
