#include "comm/nccl/nccl_builtin_layers.hpp"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <set>
#include <utility>

namespace gradsweep::comm {
namespace {

bool open(const FlightEntry& e) { return e.id != 0 && (e.state == CallState::Issued || e.state == CallState::Running); }

// The call a failure is blamed on: the oldest collective still open, since NCCL's error belongs to the
// communicator, not to the call that happened to be waiting (an async call queued behind the one that
// broke); else the oldest open point-to-point call.
std::string oldest_open(const std::vector<FlightEntry>& entries) {
  for (const FlightEntry& e : entries)
    if (open(e) && is_collective(e.shape.op)) return std::string(to_string(e.shape.op)) + " #" + std::to_string(e.seq);
  for (const FlightEntry& e : entries)
    if (open(e)) return std::string(to_string(e.shape.op)) + " (point-to-point #" + std::to_string(e.seq) + ")";
  return "a communication call";
}

}  // namespace

std::string numbered(const CallShape& shape, std::uint64_t seq) {
  if (is_collective(shape.op)) return describe(shape) + " #" + std::to_string(seq);
  return describe(shape) + " (point-to-point #" + std::to_string(seq) + ")";
}

HangVerdict judge_failure(const std::vector<RankProgress>& ranks, int rank, const std::string& failed,
                          const std::string& error) {
  const HangVerdict where = judge_hang(ranks);
  // A rank that did not answer, or that is elsewhere than the rest, is a better suspect than this one:
  // a peer that died or stopped is the usual reason for NCCL's "remote process exited" here.
  bool behind = false;
  std::set<std::uint64_t> positions;  // as judge_hang orders ranks: inside collective s, or past s
  for (const RankProgress& r : ranks) {
    if (!r.answered) behind = true;
    if (r.answered) positions.insert(r.waiting_seq ? 2 * *r.waiting_seq : 2 * r.issued + 1);
  }
  HangVerdict verdict;
  verdict.summary =
      behind || positions.size() > 1 ? where.summary : "rank " + std::to_string(rank) + " failed in " + failed;
  verdict.message = error + "; " + where.message;
  return verdict;
}

NcclForensics::NcclForensics(double limit_seconds, double grace_seconds, EndJob end_job, Refresh refresh_calls)
    : grace_seconds_(grace_seconds),
      end_job_(std::move(end_job)),
      refresh_(std::move(refresh_calls)),
      forensics_("nccl"),
      timeout_(
          std::chrono::duration<double>(limit_seconds),
          [this](const std::string& what, double waited) { on_timeout(what, waited); },
          [this] {
            refresh();
            forensics_.poll_requests();
          }) {}

void NcclForensics::set_rank(int rank, int size) {
  rank_ = rank;
  size_ = size;
  forensics_.set_rank(rank, size);
}

void NcclForensics::set_group(const std::string& name, const std::vector<int>& job_ranks) {
  forensics_.set_group(name, job_ranks);
}

void NcclForensics::refresh() {
  if (refresh_) refresh_();
}

std::uint64_t NcclForensics::issue(const CallShape& shape, bool running) {
  fault_injection::check_call(rank_, shape);
  return forensics_.recorder().issue(shape, running);
}

// As the MPI backend: the ranks' dumps say who is behind before the job ends. The grace period lets every
// rank's watchdog thread (which looks once a second) answer.
void NcclForensics::on_timeout(const std::string& what, double waited) {
  refresh();
  const HangVerdict verdict = forensics_.on_hang(what, grace_seconds_);
  if (!verdict.message.empty())
    spdlog::error("hang: {} (flight recorder dumps in {})", verdict.message, forensics::directory().string());
  end_job_(what, waited, timeout_.limit_seconds());
}

std::string NcclForensics::on_failure(const std::string& error) {
  const std::filesystem::path dir = forensics::directory();
  if (dir.empty()) return {};
  refresh();
  const std::string failed = oldest_open(forensics_.recorder().entries());
  forensics_.request_and_wait("this rank failed: " + error, grace_seconds_);
  HangVerdict verdict = judge_failure(read_dumps(dir, size_, forensics_.file_prefix()), rank_, failed, error);
  if (!forensics_.group_label().empty()) {
    verdict.summary = "in " + forensics_.group_label() + ": " + verdict.summary;
    verdict.message = "in " + forensics_.group_label() + ": " + verdict.message;
  }
  forensics::write_verdict("error", verdict.summary, verdict.message);
  spdlog::error("{} (flight recorder dumps in {})", verdict.message, dir.string());
  return verdict.message;
}

}  // namespace gradsweep::comm
