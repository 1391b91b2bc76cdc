#pragma once
// What the ranks' flight-recorder dumps say about a hung job: which ranks did not reach which collective,
// and what the others are waiting in. Pure (no files, no MPI), so that it can be tested with made-up dumps.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gradsweep::comm {

// One rank as its dump describes it (or as its missing dump does).
struct RankProgress {
  int rank = 0;
  bool answered = false;       // false: no dump arrived (stopped, dead, or too slow to answer)
  std::uint64_t issued = 0;    // collectives issued
  std::uint64_t finished = 0;  // highest collective number finished
  // The oldest collective issued and not finished, if any: its number and what it is
  // ("allreduce of 1024 float32 (4.0 KiB)").
  std::optional<std::uint64_t> waiting_seq;
  std::string waiting_in;
  // The peers its unfinished point-to-point requests wait on (a ring's neighbours, a recv's source), in
  // the communicator's ranks: what tells a stopped neighbour from ranks that are late only because of it.
  std::vector<int> waiting_on;
};

struct HangVerdict {
  // "ranks 1 did not finish allreduce #183": short, for results.csv ("hang: " + summary).
  std::string summary;
  // Every rank's part: "rank 2 is in allreduce #183 (1.2 MiB); ranks 0,1,3 finished #183 and wait in
  // allreduce #184 (1.2 MiB)".
  std::string message;
};

// The ranks behind are, in this order: those the waiting ranks point at (waiting_on) that did not answer,
// or answered from outside any call (neither waiting on a peer nor in a collective); else, among the
// ranks pointed at that wait on peers too (a link cut both ways stalls its neighbours, which then wait on
// it), the one pointed at by the most ranks, ties broken by how many of those it waits on in turn; else
// those that did not answer or are least advanced.
HangVerdict judge_hang(const std::vector<RankProgress>& ranks);

// The ranks named by the waits alone (the first two rules above); empty when the waits name none.
std::vector<int> blamed_by_waits(const std::vector<RankProgress>& ranks);

// "rank 2", "ranks 0,1,3".
std::string rank_list(const std::vector<int>& ranks);

}  // namespace gradsweep::comm
