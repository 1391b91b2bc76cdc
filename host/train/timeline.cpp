#include "train/timeline.hpp"

#include "comm/forensics/flight_recorder.hpp"
#include "train/timeline_link_probe.hpp"
#include "train/trace_merge.hpp"

#include <gradsweep/sdk/status.hpp>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace gradsweep::train {
namespace fs = std::filesystem;

namespace {
// Spans kept per sampled step (each ~150 bytes in the trace): the ~1 MB per rank and step bound holds
// however many micro-batches a step has. The flight recorder bounds the calls (256).
constexpr std::size_t kMaxSpans = 5000;
// step, data, forward, backward, exposed_comm, update, wait, other, measured steps; then the seconds spent
// recording sampled steps and the seconds all steps took.
constexpr int kTimelineFields = 11;
constexpr int kTraceField = 9, kStepsField = 10;

std::int64_t ns_of(Timeline::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

nlohmann::json breakdown_json(const StepBreakdown& b) {
  return {{"step_s", b.step},         {"data_s", b.data},
          {"compute_s", b.compute()}, {"forward_s", b.forward},
          {"backward_s", b.backward}, {"exposed_comm_s", b.exposed_comm},
          {"update_s", b.update},     {"wait_s", b.wait},
          {"other_s", b.other},       {"unaccounted_s", b.unaccounted()}};
}
// Running mean: `mean` holds the mean of n - 1 breakdowns; afterwards, of n with `b`.
void add_to_mean(StepBreakdown& mean, const StepBreakdown& b, std::int64_t n) {
  const double k = static_cast<double>(n);
  for (auto field : {&StepBreakdown::step, &StepBreakdown::data, &StepBreakdown::forward, &StepBreakdown::backward,
                     &StepBreakdown::exposed_comm, &StepBreakdown::update, &StepBreakdown::wait, &StepBreakdown::other})
    mean.*field += (b.*field - mean.*field) / k;
}

}  // namespace

const char* to_string(Phase phase) {
  switch (phase) {
    case Phase::Prologue: return "begin_step";
    case Phase::Data: return "data";
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::EndBackward: return "end_backward";
    case Phase::Update: return "update";
    case Phase::Report: return "wait_for_ranks";
    case Phase::Eval: return "evaluation";
    case Phase::Checkpoint: return "checkpoint";
  }
  return "?";
}

Timeline::Timeline(comm::HostCommunicator& comm, const std::string& mode, const fs::path& out_dir,
                   std::int64_t first_step, std::int64_t steps)
    : comm_(comm), mode_(mode), out_dir_(out_dir), first_step_(first_step), steps_(steps) {
  if (mode_ == "off") return;
  clock_ = measure_clock_offset(comm_);
  fs::create_directories(out_dir_ / "trace");
  const fs::path part = out_dir_ / "trace" / ("rank-" + std::to_string(comm_.rank()) + ".jsonl");
  part_.open(part, std::ios::trunc);
  if (!part_) throw std::runtime_error("cannot write " + part.string());
  spans_.reserve(256);
  write_line({{"rank", comm_.rank()},
              {"world_size", comm_.size()},
              {"pid", static_cast<long>(::getpid())},
              {"mode", mode_},
              {"origin_ns", to_rank0(steady_ns())},
              {"clock",
               {{"method", "ping-pong with rank 0 (Cristian), shortest of the rounds"},
                {"offset_ns", clock_.offset_ns},
                {"round_trip_ns", clock_.round_trip_ns},
                {"rounds", clock_.rounds}}}});
}

bool Timeline::sampled(std::int64_t step) const {
  if (mode_ == "all") return true;
  if (mode_ != "sampled") return false;
  const std::int64_t first = steps_ - first_step_ > 1 ? first_step_ + 1 : first_step_;
  const std::int64_t last = steps_ - 1;
  return step == first || step == (first + last) / 2 || step == last;
}

void Timeline::begin_step(std::int64_t step, Clock::time_point start) {
  step_ = step;
  in_step_ = true;
  step_start_ = start;
  last_phase_ = -1;
  phase_s_.fill(0);
  blocked_s_.fill(0);
  blocked_mark_ = comm_.blocked_seconds_so_far();
  sampled_ = sampled(step);
  if (!sampled_) return;
  const Clock::time_point t0 = Clock::now();
  spans_.clear();
  wall_minus_steady_ns_ = comm::wall_clock_ns() - steady_ns();
  last_call_id_ = 0;
  if (const comm::FlightRecorder* recorder = comm_.flight_recorder())
    for (const comm::FlightEntry& e : recorder->entries()) last_call_id_ = std::max(last_call_id_, e.id);
  trace_s_ += std::chrono::duration<double>(Clock::now() - t0).count();
}

double Timeline::span(Phase phase, Clock::time_point since) {
  if (!in_step_) {
    const Clock::time_point now = Clock::now();
    record_between_steps(phase, since, now);
    return std::chrono::duration<double>(now - since).count();
  }
  // The counter first: its lock may wait for the worker thread (descheduled while it holds it, on a busy
  // machine), and that wait must fall inside a phase, not between two, or the phases stop adding up.
  const double blocked_now = comm_.blocked_seconds_so_far();
  const Clock::time_point now = Clock::now();
  const double seconds = std::chrono::duration<double>(now - since).count();
  // The step report takes the counters (they restart from 0): its own exchange is not the strategy's.
  const double blocked = std::max(0.0, blocked_now - blocked_mark_);
  blocked_mark_ = blocked_now;
  // What runs between two marked phases (freeing the autograd graph after backward, the loop's own
  // bookkeeping) counts to the phase before it, so that the phases partition the step.
  if (last_phase_ >= 0 && since > last_end_) {
    phase_s_[static_cast<std::size_t>(last_phase_)] += std::chrono::duration<double>(since - last_end_).count();
    if (sampled_ && !spans_.empty()) spans_.back().end_ns = ns_of(since);
  }
  const auto i = static_cast<std::size_t>(phase);
  phase_s_[i] += seconds;
  if (phase != Phase::Report) blocked_s_[i] += blocked;
  last_phase_ = static_cast<int>(phase);
  last_end_ = now;
  if (sampled_ && spans_.size() < kMaxSpans) spans_.push_back({phase, ns_of(since), ns_of(now), blocked});
  return seconds;
}

void Timeline::record_between_steps(Phase phase, Clock::time_point since, Clock::time_point now) {
  if (!sampled(last_finished_) || !part_.is_open()) return;
  write_line({{"between_steps", last_finished_},
              {"events", nlohmann::json::array({{{"name", to_string(phase)},
                                                 {"cat", "phase"},
                                                 {"tid", 1},
                                                 {"start_ns", to_rank0(ns_of(since))},
                                                 {"end_ns", to_rank0(ns_of(now))}}})}});
}

nlohmann::json Timeline::comm_events(std::int64_t from_ns, std::int64_t to_ns) {
  nlohmann::json events = nlohmann::json::array();
  const comm::FlightRecorder* recorder = comm_.flight_recorder();
  if (recorder == nullptr) return events;
  std::uint64_t lowest = 0;
  for (const comm::FlightEntry& e : recorder->entries()) {
    if (e.id <= last_call_id_) continue;
    if (lowest == 0 || e.id < lowest) lowest = e.id;
    // The recorder keeps wall-clock times; the step's spans are steady-clock ones.
    auto steady = [&](std::int64_t wall) { return wall == 0 ? 0 : wall - wall_minus_steady_ns_; };
    const std::int64_t issued = steady(e.issued_ns);
    const std::int64_t start = e.started_ns != 0 ? steady(e.started_ns) : issued;
    const std::int64_t end = e.ended_ns != 0 ? steady(e.ended_ns) : std::max(start, to_ns);
    nlohmann::json args{{"op", to_string(e.shape.op)},
                        {"seq", e.seq},
                        {"bytes", e.shape.bytes},
                        {"count", e.shape.count},
                        {"state", to_string(e.state)}};
    if (e.shape.dtype >= 0) args["dtype"] = comm::dtype_name(e.shape.dtype);
    // Asynchronous collectives run on the backend's worker thread: a track of their own.
    const bool async = e.shape.op == comm::CommOp::AllreduceAsync;
    if (async) args["queued_ms"] = static_cast<double>(start - issued) / 1e6;
    events.push_back({{"name", describe(e.shape)},
                      {"cat", "comm"},
                      {"tid", async ? 2 : 1},
                      {"start_ns", to_rank0(std::max(start, from_ns))},
                      {"end_ns", to_rank0(end)},
                      {"args", std::move(args)}});
  }
  if (lowest > last_call_id_ + 1) events.push_back({{"calls_lost", lowest - last_call_id_ - 1}});
  return events;
}

void Timeline::end_step(double seconds) {
  in_step_ = false;
  last_finished_ = step_;
  const auto at = [&](Phase p) { return static_cast<std::size_t>(p); };
  const auto net = [&](Phase p) { return phase_s_[at(p)] - blocked_s_[at(p)]; };
  StepBreakdown b;
  b.step = seconds;
  b.data = net(Phase::Data);
  b.forward = net(Phase::Forward);
  b.backward = net(Phase::Backward);
  b.update = net(Phase::EndBackward) + net(Phase::Update);
  b.wait = phase_s_[at(Phase::Report)];
  b.other = net(Phase::Prologue);
  for (Phase p : {Phase::Prologue, Phase::Data, Phase::Forward, Phase::Backward, Phase::EndBackward, Phase::Update})
    b.exposed_comm += blocked_s_[at(p)];
  if (step_ != first_step_ || steps_ - first_step_ == 1) {
    add_to_mean(mean_, b, ++measured_);
  }
  steps_s_ += seconds;
  if (!sampled_ || !part_.is_open()) return;
  const Clock::time_point t0 = Clock::now();
  const std::int64_t start = ns_of(step_start_);
  const std::int64_t end = start + static_cast<std::int64_t>(seconds * 1e9);
  nlohmann::json events = comm_events(start, end);
  for (const Span& s : spans_)
    events.push_back({{"name", to_string(s.phase)},
                      {"cat", "phase"},
                      {"tid", 1},
                      {"start_ns", to_rank0(s.start_ns)},
                      {"end_ns", to_rank0(s.end_ns)},
                      {"args", {{"blocked_ms", s.blocked * 1e3}}}});
  if (spans_.size() == kMaxSpans) events.push_back({{"spans_dropped", true}});
  write_line({{"step", step_},
              {"start_ns", to_rank0(start)},
              {"end_ns", to_rank0(end)},
              {"breakdown", breakdown_json(b)},
              {"events", std::move(events)}});
  spans_.clear();
  trace_s_ += std::chrono::duration<double>(Clock::now() - t0).count();
  ++traced_steps_;
}

void Timeline::write_line(const nlohmann::json& line) {
  // One line per record, flushed: a rank killed later leaves every finished step on disk, and at worst a
  // torn last line, which the merge skips.
  part_ << line.dump() << '\n';
  part_.flush();
}

nlohmann::json Timeline::finish() {
  if (part_.is_open())
    write_line({{"end", "completed"}, {"last_step", last_finished_}, {"at_ns", to_rank0(steady_ns())}});
  // Before the allgather below: its take_stats() then drops the probe's traffic with the trainer's bookkeeping.
  const nlohmann::json links = probe_links(comm_);
  const StepBreakdown& m = mean_;
  const torch::Tensor mine = torch::tensor({m.step, m.data, m.forward, m.backward, m.exposed_comm, m.update, m.wait,
                                            m.other, static_cast<double>(measured_), trace_s_, steps_s_},
                                           torch::kDouble);
  torch::Tensor all = mine.view({1, kTimelineFields});
  if (comm_.size() > 1) {
    all = torch::empty({kTimelineFields * comm_.size()}, torch::kDouble);
    sdk::check(comm_.allgather(mine, all));
    comm_.take_stats();  // the trainer's bookkeeping, not the strategy's traffic
    all = all.view({comm_.size(), kTimelineFields});
  }
  const auto a = all.accessor<double, 2>();
  std::vector<StepBreakdown> ranks;
  StepBreakdown cell;
  for (int r = 0; r < comm_.size(); ++r) {
    StepBreakdown b{a[r][0], a[r][1], a[r][2], a[r][3], a[r][4], a[r][5], a[r][6], a[r][7]};
    ranks.push_back(b);
    add_to_mean(cell, b, r + 1);
  }
  // Over the ranks that compute: a parameter server that only serves has no forward or backward, and
  // its short work time would make the median, and so the index, meaningless.
  std::vector<double> work;
  int slowest = -1;
  for (int r = 0; r < comm_.size(); ++r) {
    const StepBreakdown& b = ranks[static_cast<std::size_t>(r)];
    if (b.compute() <= 0) continue;
    work.push_back(b.work());
    if (slowest < 0 || b.work() > ranks[static_cast<std::size_t>(slowest)].work()) slowest = r;
  }
  const double mid = median(work);
  nlohmann::json j = breakdown_json(cell);
  j["straggler_index"] = slowest >= 0 && mid > 0 ? ranks[static_cast<std::size_t>(slowest)].work() / mid : std::nan("");
  j["slowest_rank"] = slowest >= 0 ? nlohmann::json(slowest) : nlohmann::json(nullptr);
  for (const StepBreakdown& b : ranks) {
    const nlohmann::json parts = breakdown_json(b);
    for (const auto& [key, value] : parts.items()) j["by_rank"][key].push_back(value);
  }
  for (const StepBreakdown& b : ranks) j["by_rank"]["work_s"].push_back(b.work());
  if (!std::isfinite(j["straggler_index"].get<double>())) j["straggler_index"] = nullptr;
  for (const auto& [key, value] : links.items()) j[key] = value;
  double share = 0;
  for (int r = 0; r < comm_.size(); ++r)
    if (a[r][kStepsField] > 0) share = std::max(share, a[r][kTraceField] / a[r][kStepsField]);
  cost_ = {{"mode", mode_}, {"steps_traced", traced_steps_}, {"record_s", trace_s_}, {"share_of_step_time", share}};
  finished_ = true;
  const Clock::time_point merge_start = Clock::now();
  if (comm_.rank() == 0) merge_on_rank0();
  cost_["merge_s"] = mode_ == "off" ? 0.0 : std::chrono::duration<double>(Clock::now() - merge_start).count();
  part_.close();
  return j;
}

void Timeline::merge_on_rank0() noexcept {
  if (comm_.rank() != 0 || mode_ == "off") return;
  try {
    const MergedTrace merged = merge_trace(out_dir_);
    spdlog::info("trace of {} step(s) on {} rank(s): {}", merged.steps_traced, merged.ranks.size(),
                 merged.file.string());
  } catch (const std::exception& e) {
    spdlog::warn("could not merge the trace in {}: {}", out_dir_.string(), e.what());
  }
}

Timeline::~Timeline() {
  if (finished_ || mode_ == "off" || !part_.is_open()) return;
  const bool failed = std::uncaught_exceptions() > exceptions_;
  try {
    if (in_step_ && sampled_) {  // the phases of the step that did not finish
      nlohmann::json events = nlohmann::json::array();
      for (const Span& s : spans_)
        events.push_back({{"name", to_string(s.phase)},
                          {"cat", "phase"},
                          {"tid", 1},
                          {"start_ns", to_rank0(s.start_ns)},
                          {"end_ns", to_rank0(s.end_ns)}});
      write_line(
          {{"unfinished_step", step_}, {"start_ns", to_rank0(ns_of(step_start_))}, {"events", std::move(events)}});
    }
    nlohmann::json end{
        {"end", failed ? "failed" : "stopped"}, {"last_step", last_finished_}, {"at_ns", to_rank0(steady_ns())}};
    if (in_step_) {
      end["in_step"] = step_;
      end["after_phase"] = last_phase_ < 0 ? "(none)" : to_string(static_cast<Phase>(last_phase_));
    }
    write_line(end);
    part_.close();
    // Stopping (--stop-after) happens on every rank at the same step: wait for the others' end records.
    // A failure may have left ranks that never come, so rank 0 merges what is there.
    if (!failed && comm_.size() > 1) (void)comm_.barrier();
  } catch (const std::exception& e) {
    spdlog::warn("could not finish this rank's trace: {}", e.what());
  }
  merge_on_rank0();
}

}  // namespace gradsweep::train
