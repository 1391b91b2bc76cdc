#include "comm/forensics/flight_recorder.hpp"

#include "comm/core/dtype_name.hpp"

#include <c10/core/ScalarType.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace gradsweep::comm {

const char* to_string(CommOp op) {
  switch (op) {
    case CommOp::Allreduce: return "allreduce";
    case CommOp::Broadcast: return "broadcast";
    case CommOp::Allgather: return "allgather";
    case CommOp::ReduceScatter: return "reduce_scatter";
    case CommOp::Barrier: return "barrier";
    case CommOp::AllreduceAsync: return "allreduce_async";
    case CommOp::Send: return "send";
    case CommOp::Recv: return "recv";
    case CommOp::RecvAny: return "recv_any";
    case CommOp::ReduceScatterAsync: return "reduce_scatter_async";
    case CommOp::AllgatherAsync: return "allgather_async";
  }
  return "?";
}

bool is_collective(CommOp op) { return op != CommOp::Send && op != CommOp::Recv && op != CommOp::RecvAny; }

const char* to_string(CallState state) {
  switch (state) {
    case CallState::Issued: return "issued";
    case CallState::Running: return "running";
    case CallState::Done: return "done";
    case CallState::Failed: return "failed";
  }
  return "?";
}

std::string dtype_name(std::int16_t dtype) {
  if (dtype < 0) return "";
  return comm::dtype_name(static_cast<c10::ScalarType>(dtype));
}

std::string human_bytes(std::uint64_t bytes) {
  char text[32];
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 3) {
    value /= 1024;
    ++unit;
  }
  std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  return text;
}

std::string describe(const CallShape& s) {
  std::string text = std::string(s.ring ? "ring " : "") + to_string(s.op);
  if (s.dtype >= 0) text += " of " + std::to_string(s.count) + " " + dtype_name(s.dtype);
  if (s.bytes > 0) text += " (" + human_bytes(s.bytes) + ")";
  if (s.op == CommOp::Broadcast) text += " from rank " + std::to_string(s.peer);
  if (s.op == CommOp::Send) text += " to rank " + std::to_string(s.peer);
  if (s.op == CommOp::Recv) text += " from rank " + std::to_string(s.peer);
  return text;
}

std::int64_t wall_clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

FlightRecorder::FlightRecorder(std::size_t capacity) : slots_(capacity) {
  if (capacity == 0) throw std::invalid_argument("FlightRecorder: capacity must be positive");
}

FlightEntry* FlightRecorder::find(std::uint64_t id) {
  if (id == 0) return nullptr;
  FlightEntry& e = slots_[(id - 1) % slots_.size()];
  return e.id == id ? &e : nullptr;
}

std::uint64_t FlightRecorder::issue(const CallShape& shape, bool running) {
  const std::int64_t now = wall_clock_ns();
  const std::lock_guard<std::mutex> lock(mutex_);
  const std::uint64_t id = next_id_++;
  FlightEntry& e = slots_[(id - 1) % slots_.size()];
  e.id = id;
  e.seq = is_collective(shape.op) ? ++collectives_ : ++point_to_point_;
  e.shape = shape;
  e.state = running ? CallState::Running : CallState::Issued;
  e.issued_ns = now;
  e.started_ns = running ? now : 0;
  e.ended_ns = 0;
  return id;
}

void FlightRecorder::start(std::uint64_t id) {
  const std::int64_t now = wall_clock_ns();
  const std::lock_guard<std::mutex> lock(mutex_);
  if (FlightEntry* e = find(id)) {
    e->state = CallState::Running;
    e->started_ns = now;
  }
}

void FlightRecorder::finish(std::uint64_t id, bool ok) {
  const std::int64_t now = wall_clock_ns();
  const std::lock_guard<std::mutex> lock(mutex_);
  if (FlightEntry* e = find(id)) {
    e->state = ok ? CallState::Done : CallState::Failed;
    e->ended_ns = now;
    if (e->started_ns == 0) e->started_ns = now;
    if (is_collective(e->shape.op)) last_finished_ = std::max(last_finished_, e->seq);
  }
}

std::vector<FlightEntry> FlightRecorder::entries() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::vector<FlightEntry> held;
  held.reserve(slots_.size());
  const std::uint64_t recorded = next_id_ - 1;
  const std::uint64_t first = recorded > slots_.size() ? recorded - slots_.size() + 1 : 1;
  for (std::uint64_t id = first; id <= recorded; ++id) held.push_back(slots_[(id - 1) % slots_.size()]);
  return held;
}

std::uint64_t FlightRecorder::collectives_issued() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return collectives_;
}

std::uint64_t FlightRecorder::last_collective_finished() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return last_finished_;
}

FlightRecorder::Scope::~Scope() {
  if (id_ != 0) recorder_.finish(id_, std::uncaught_exceptions() == exceptions_);
}

std::uint64_t FlightRecorder::seq_of(std::uint64_t id) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (id == 0) return 0;
  const FlightEntry& e = slots_[(id - 1) % slots_.size()];
  return e.id == id ? e.seq : 0;
}

std::uint64_t FlightRecorder::Scope::seq() const { return recorder_.seq_of(id_); }

}  // namespace gradsweep::comm
