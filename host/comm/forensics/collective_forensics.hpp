#pragma once
// What a rank does with its flight recorder (comm/forensics/flight_recorder.hpp) when the job goes wrong: dump it
// into the cell directory, ask the other ranks to dump theirs, and say from the dumps which rank did not
// reach which collective (comm/forensics/hang_verdict.hpp).
//
// How the ranks learn of each other: through files in the cell directory, not through MPI. The
// communicator that hung cannot carry anything, a stopped (SIGSTOP) rank answers nothing whatever the
// channel, and a second MPI communicator would only progress while some thread polls it. Files need no
// progress engine and no agreement: the rank whose watchdog fires writes flight-recorder/dump-requested;
// every rank's watchdog thread looks for it once a second (one stat) and answers with its own dump
// rank-<r>.json; after a short grace period the first rank reads whichever dumps arrived, and a rank
// whose dump is missing is the one that could not answer. The cell directory is where every rank already
// writes its log and checkpoints, so it is shared by all ranks of a job (also across nodes).
//
//   DIR/flight-recorder/rank-<r>.json   one rank's buffer (schema in docs/communicators.md)
//   DIR/flight-recorder/group-<name>-at<w>-rank-<r>.json   the same for a sub-communicator (sdk::Group)
//                                       `name`, whose lowest rank in the job is w (several groups share a name)
//   DIR/flight-recorder/dump-requested  "<rank> <nanoseconds>": who asked, when
//   DIR/flight-recorder/verdict.json    {"kind": "hang" | "mismatch" | "error", "summary", "message"}
#include "comm/forensics/flight_recorder.hpp"
#include "comm/forensics/hang_verdict.hpp"
#include "comm/forensics/peer_waits.hpp"

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

namespace gradsweep::comm {

// What a call on `tensor` is, for the flight recorder and the fingerprint check, on any backend: its op,
// reduction, dtype, element count, peer and bytes; `ring` for gradsweep's own ring algorithm.
CallShape call_shape(CommOp op, const torch::Tensor& tensor, int reduce = -1, int peer = -1, bool ring = false);

namespace forensics {
// The cell directory dumps go under; until it is set (or when empty) nothing is written. Removes this
// rank's dump from an earlier run of the cell (rank 0 also the old request and verdict).
void set_directory(const std::filesystem::path& cell_dir, int rank);
std::filesystem::path directory();  // DIR/flight-recorder, or empty

// runtime.check_collectives (GRADSWEEP_CHECK_COLLECTIVES=0/1 overrides): set before backends are made.
void set_configured_check(bool on);
bool check_collectives();

// Writes verdict.json (atomically). No-op without a directory.
void write_verdict(const std::string& kind, const std::string& summary, const std::string& message);

// A rank that is failing with `why` (train_command's end of a job): dumps every live communicator's
// buffer, asks the other ranks for theirs and waits for them (at most `grace_seconds`).
void on_rank_failure(const std::string& why, double grace_seconds = 3.0);
}  // namespace forensics

// One communicator's flight recorder and its part in the exchange above.
class CollectiveForensics {
 public:
  explicit CollectiveForensics(const char* backend);
  // Set once the backend knows them, before its first call.
  void set_rank(int rank, int size);
  // A sub-communicator's: `name` ("split(1)") and its members' ranks in the job, in the group's order. Its dumps
  // get their own files, and its verdicts and errors say which group hung.
  void set_group(const std::string& name, const std::vector<int>& job_ranks);
  // "group split(1) (job ranks 1,3)", or empty for the job's own communicator.
  const std::string& group_label() const { return group_label_; }
  // What this communicator's dump files start with (read_dumps' `prefix`): "" for the job's communicator.
  const std::string& file_prefix() const { return file_prefix_; }
  ~CollectiveForensics();
  CollectiveForensics(const CollectiveForensics&) = delete;
  CollectiveForensics& operator=(const CollectiveForensics&) = delete;

  FlightRecorder& recorder() { return recorder_; }
  // What this communicator's transports wait on (the MPI ring's requests); with the recorder's own
  // unfinished send and recv, the dump's "waiting_on".
  PeerWaits& peer_waits() { return peer_waits_; }
  nlohmann::json dump_json(const std::string& reason) const;
  // Writes rank-<r>.json; false when there is no directory or the write failed (logged).
  bool dump(const std::string& reason) const;

  // From the watchdog's thread, about once a second: answers a request for dumps made since the last.
  void poll_requests();
  // The watchdog fired on this rank: dump, ask the others, wait up to `grace_seconds` for their dumps
  // and return what they say (also written to verdict.json). Empty message without a directory.
  HangVerdict on_hang(const std::string& what, double grace_seconds);
  // Dump, ask the others, wait for them: the common start of on_hang and a failing rank's end.
  void request_and_wait(const std::string& reason, double grace_seconds);

 private:
  std::atomic<int> rank_{0}, size_{1};
  const char* backend_;
  std::string group_name_, group_label_, file_prefix_;  // set before the first call, then read-only
  FlightRecorder recorder_;
  PeerWaits peer_waits_;
  std::mutex answered_mutex_;
  std::string answered_;  // the last request answered or made (or left by an earlier run), guarded by answered_mutex_
  friend void forensics::set_directory(const std::filesystem::path&, int);
};

// Reads the dumps present in `dir` for ranks 0..size-1 (a missing or unreadable one: not answered);
// `prefix`: a group's (CollectiveForensics::set_group), empty for the job's communicator.
std::vector<RankProgress> read_dumps(const std::filesystem::path& dir, int size, const std::string& prefix = "");

}  // namespace gradsweep::comm
