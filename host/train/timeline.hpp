#pragma once
// One rank's timeline of its steps: how long each phase took (every step, for the step breakdown in
// summary.json) and, on the steps it samples, every phase and communication call as a span with its start
// and end, appended to DIR/trace/rank-<r>.jsonl as each step finishes. Rank 0 merges the ranks' files into
// DIR/trace.json (train/trace_merge.hpp) at the end, and on the way out when the run stops or fails.
//
// On a step that is not sampled, recording is a flag test plus the phase sums the breakdown needs (a clock
// read and the communicator's blocked-time counter per phase).
#include "comm/core/host_communicator.hpp"
#include "train/clock_sync.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace gradsweep::train {

// The trainer's phases, in step order; Eval and Checkpoint run between steps.
enum class Phase : std::uint8_t { Prologue, Data, Forward, Backward, EndBackward, Update, Report, Eval, Checkpoint };
constexpr int kPhaseCount = 9;
const char* to_string(Phase phase);

// One step split so that its parts add up to its time (docs/results.md, "Step breakdown"), seconds.
struct StepBreakdown {
  double step = 0, data = 0, forward = 0, backward = 0, exposed_comm = 0, update = 0, wait = 0, other = 0;
  double compute() const { return forward + backward; }
  // step minus the parts: the clock reads after the last phase
  double unaccounted() const { return step - (data + forward + backward + exposed_comm + update + wait + other); }
  // What the rank took by itself: the step without waiting for communication or for the other ranks.
  double work() const { return step - exposed_comm - wait; }
};

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;

  // `mode`: sampled, all or off (metrics.trace). Every rank constructs it at the same point: unless off,
  // it measures the clock offsets against rank 0 (clock_sync.hpp). Steps [first_step, steps) are to run;
  // the first of them is warm-up and left out of the breakdown when there are others, as in summary.json.
  Timeline(comm::HostCommunicator& comm, const std::string& mode, const std::filesystem::path& out_dir,
           std::int64_t first_step, std::int64_t steps);
  // Without finish(): writes where the run ended (stopped, or failed in which step and phase) and, on
  // rank 0, merges what the ranks have written so far.
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  void begin_step(std::int64_t step, Clock::time_point start);
  // `phase` ran on the training thread from `since` until now; returns its seconds.
  double span(Phase phase, Clock::time_point since);
  // The step took `seconds` from the start given to begin_step.
  void end_step(double seconds);
  // Every rank: gathers each rank's mean breakdown; rank 0 writes trace.json. Returns summary.json's
  // "step_breakdown" (the same on every rank).
  nlohmann::json finish();
  // After finish(): what the timeline cost, summary.json's "trace" (docs/results.md, "Trace"): the time
  // spent on the sampled steps' records, as a share of the time the steps took (the largest over the
  // ranks), and rank 0's merge. Measured in the run itself, so that a slower or faster machine moves the
  // cost and the steps alike.
  const nlohmann::json& cost() const { return cost_; }

  bool sampled(std::int64_t step) const;

 private:
  struct Span {
    Phase phase;
    std::int64_t start_ns, end_ns;  // this rank's steady clock
    double blocked;                 // seconds blocked in communication inside it
  };
  void record_between_steps(Phase phase, Clock::time_point since, Clock::time_point now);
  nlohmann::json comm_events(std::int64_t from_ns, std::int64_t to_ns);
  void write_line(const nlohmann::json& line);
  void merge_on_rank0() noexcept;
  std::int64_t to_rank0(std::int64_t local_ns) const { return local_ns + clock_.offset_ns; }

  comm::HostCommunicator& comm_;
  std::string mode_;
  std::filesystem::path out_dir_;
  std::int64_t first_step_, steps_;
  ClockOffset clock_;
  std::ofstream part_;

  // The step in progress.
  std::int64_t step_ = -1;
  bool in_step_ = false, sampled_ = false;
  int last_phase_ = -1;                      // the last phase of the step in progress that ended; -1 none yet
  Clock::time_point step_start_, last_end_;  // the step's start; the end of its last phase so far
  double blocked_mark_ = 0;
  std::array<double, kPhaseCount> phase_s_{}, blocked_s_{};
  std::vector<Span> spans_;
  std::uint64_t last_call_id_ = 0;  // the flight recorder's newest call when the sampled step began
  std::int64_t wall_minus_steady_ns_ = 0;

  // Means over the measured steps, and the last finished step.
  std::int64_t measured_ = 0, last_finished_ = -1;
  StepBreakdown mean_;
  // This rank's time spent on the records of sampled steps, and its steps' time, all steps.
  double trace_s_ = 0, steps_s_ = 0;
  std::int64_t traced_steps_ = 0;
  nlohmann::json cost_;
  bool finished_ = false;
  int exceptions_ = std::uncaught_exceptions();
};

}  // namespace gradsweep::train
