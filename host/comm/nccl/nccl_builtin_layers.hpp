#pragma once
// The NCCL backend's flight recorder, watchdog and verdicts: what the MPI backend does when a collective
// hangs or fails (comm/forensics/collective_forensics.hpp), in a part that needs neither CUDA nor NCCL, so that it
// is built into every gradsweep and tested on machines without a GPU (tests/comm/nccl_builtin_layers_test.cpp).
// The dumps, the exchange of requests and the hang verdict are the MPI backend's own code; this adds what
// differs on a GPU: a collective runs on a stream after the call that issued it returns, and NCCL reports
// a failed collective as the communicator's asynchronous error, not as the call's return code.
//
// Internal to host/comm (comm/nccl/nccl_communicator.cpp).
#include "comm/forensics/collective_forensics.hpp"
#include "comm/forensics/collective_timeout.hpp"
#include "comm/forensics/fault_injection.hpp"
#include "comm/forensics/flight_recorder.hpp"
#include "comm/forensics/hang_verdict.hpp"

#include <torch/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace gradsweep::comm {

// "allreduce of 1024 float32 (4.0 KiB) #12" (the collective's number, the same on every rank), "send of
// 4 float32 (16 B) to rank 1 (point-to-point #3)": what the watchdog, errors and logs call a recorded call.
std::string numbered(const CallShape& shape, std::uint64_t seq);

// The verdict when a collective failed on `rank` with `error` (which names it): the rank that did not
// answer or is behind when the dumps show one (a peer that died is why NCCL failed here), else this
// rank and `failed` ("allreduce #12"), the collective that failed. kind "error" in verdict.json.
HangVerdict judge_failure(const std::vector<RankProgress>& ranks, int rank, const std::string& failed,
                          const std::string& error);

class NcclForensics {
 public:
  // Ends the job after a hang was judged (the backend: mpi::end_hung_job). Not expected to return.
  using EndJob = std::function<void(const std::string& what, double waited, double limit)>;
  // Brings the recorder up to date with the GPU (async calls whose event completed are done) before it
  // is read; called from the watchdog's thread and from the thread that failed.
  using Refresh = std::function<void()>;

  // `limit_seconds` <= 0: no watchdog (and no answers to other ranks' requests for dumps). `refresh`
  // (may be null) runs on the watchdog's thread from the start: what it uses must outlive this object.
  NcclForensics(double limit_seconds, double grace_seconds, EndJob end_job, Refresh refresh);
  NcclForensics(const NcclForensics&) = delete;
  NcclForensics& operator=(const NcclForensics&) = delete;

  // Before the first call.
  void set_rank(int rank, int size);
  // A sub-communicator's name and members (CollectiveForensics::set_group), before the first call.
  void set_group(const std::string& name, const std::vector<int>& job_ranks);

  FlightRecorder& recorder() { return forensics_.recorder(); }
  CollectiveTimeout& timeout() { return timeout_; }

  // Records `shape` as issued, running at once when `running`, after GRADSWEEP_INJECT_FAULT had its say
  // (an injected fault fails the call unrecorded, as on MPI). Returns the entry's id.
  std::uint64_t issue(const CallShape& shape, bool running);

  // A blocking call: issued, then `before(seq)` (waiting for the caller's queued compute: not this
  // collective yet), then running until the scope ends (done, or failed by an exception).
  template <class Before>
  FlightRecorder::Scope record(const CallShape& shape, Before&& before) {
    fault_injection::check_call(rank_, shape);
    return FlightRecorder::Scope(forensics_.recorder(), shape, std::forward<Before>(before));
  }

  // The watchdog fired (`what` waited `waited` seconds): dump, ask the others, log and write the verdict,
  // then end the job.
  void on_timeout(const std::string& what, double waited);

  // A collective failed on this rank while it ran (`error` says how and names the call and rank). Called
  // while the calls are still open, so that the dump shows where this rank was: dumps, asks the others,
  // and writes verdict.json (kind "error"). Returns the verdict's message; empty without a directory.
  std::string on_failure(const std::string& error);

 private:
  void refresh();

  std::atomic<int> rank_{0}, size_{1};
  const double grace_seconds_;
  const EndJob end_job_;
  const Refresh refresh_;
  // Before timeout_: the watchdog's thread uses it until it is joined.
  CollectiveForensics forensics_;
  CollectiveTimeout timeout_;
};

}  // namespace gradsweep::comm
