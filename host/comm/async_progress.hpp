#pragma once
// How an async call's entry in the recording layer's flight recorder (comm/recorder_communicator.hpp) learns
// when the backend really runs it. A layer sees an async call only at issue and at its request's wait; a
// backend that queues the call for a worker (the MPI backend, comm/async_worker.hpp) knows when it starts and
// ends there, which is what the timeline draws and the hang verdict counts as finished. The layer names the
// entry on its own thread while it issues the call (Issuing); the backend, issuing on that thread, claims it
// (claim()) and marks it running and done from its worker. An entry nobody claims the layer keeps: running
// from issue, done at the wait.
#include "comm/flight_recorder.hpp"

#include <cstdint>
#include <memory>

namespace gradsweep::comm {

class AsyncProgress {
 public:
  AsyncProgress() = default;
  // Entry `id` of `recorder` (held alive for as long as the progress is).
  AsyncProgress(std::shared_ptr<FlightRecorder> recorder, std::uint64_t id) : recorder_(std::move(recorder)), id_(id) {}

  // Marks the entry; nothing for an empty progress.
  void started() const;
  void finished(bool ok) const;

  // The entry being issued on this thread, now the caller's to mark; empty when no layer names one (a bare
  // backend, or a call not issued through the recorder).
  static AsyncProgress claim();

  // For the layer: names a progress on this thread while it lives (below).
  class Issuing;

 private:
  std::shared_ptr<FlightRecorder> recorder_;
  std::uint64_t id_ = 0;
};

// Names `progress` on this thread while it lives (the backend's call runs inside).
class AsyncProgress::Issuing {
 public:
  explicit Issuing(AsyncProgress progress);
  ~Issuing();
  Issuing(const Issuing&) = delete;
  Issuing& operator=(const Issuing&) = delete;
  // Whether the backend claimed the entry.
  bool claimed() const { return claimed_; }

 private:
  friend class AsyncProgress;
  AsyncProgress progress_;
  Issuing* outer_;
  bool claimed_ = false;
};

}  // namespace gradsweep::comm
