#include "comm/forensics/hang_verdict.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace gradsweep::comm {
namespace {

// How far a rank got, comparable between ranks: inside collective s counts 2s; outside any collective,
// having issued s, counts 2s+1 (it has not yet issued s+1, which the ranks inside s+1 have).
std::uint64_t position(const RankProgress& r) { return r.waiting_seq ? 2 * *r.waiting_seq : 2 * r.issued + 1; }

// The collective a rank has not finished: the one it waits in, or the next it has not issued.
std::uint64_t next_unfinished(const RankProgress& r) { return r.waiting_seq ? *r.waiting_seq : r.issued + 1; }

std::string phrase(const RankProgress& r) {
  if (!r.answered) return "did not answer (stopped, or dead)";
  if (r.waiting_seq) {
    std::string text = "in " + r.waiting_in + " #" + std::to_string(*r.waiting_seq);
    return r.finished > 0 ? "finished #" + std::to_string(r.finished) + " and wait in " + text.substr(3)
                          : "wait in " + text.substr(3);
  }
  return "not in any collective (finished #" + std::to_string(r.finished) + ", issued nothing since)";
}

// What each rank says, ranks that say the same grouped, least advanced first; then whom each waits on.
std::string describe_ranks(const std::vector<RankProgress>& ranks) {
  std::map<std::tuple<bool, std::uint64_t, std::string>, std::vector<const RankProgress*>> groups;
  for (const auto& r : ranks) groups[{r.answered, position(r), phrase(r)}].push_back(&r);
  std::string parts;
  for (const auto& [key, members] : groups) {
    std::string text = std::get<2>(key);
    std::vector<int> who;
    for (const auto* r : members) who.push_back(r->rank);
    if (who.size() == 1) {  // "rank 2 is in ...", "ranks 0,1 wait in ..."
      if (text.rfind("wait in ", 0) == 0) text = "is in " + text.substr(8);
      if (const auto at = text.find(" and wait in "); at != std::string::npos) text.replace(at, 13, " and waits in ");
      if (text.rfind("not in", 0) == 0) text = "is " + text;
    } else if (text.rfind("not in", 0) == 0) {
      text = "are " + text;
    }
    parts += (parts.empty() ? "" : "; ") + rank_list(who) + " " + text;
  }
  for (const auto& r : ranks)  // "rank 3 waits on rank 2": what the blame above rests on
    if (r.answered && !r.waiting_on.empty())
      parts += "; " + rank_list({r.rank}) + " waits on " + rank_list(r.waiting_on);
  return parts;
}

}  // namespace

std::vector<int> blamed_by_waits(const std::vector<RankProgress>& ranks) {
  std::map<int, const RankProgress*> by_rank;
  for (const auto& r : ranks) by_rank[r.rank] = &r;
  const auto waits = [&](int rank) {
    const auto it = by_rank.find(rank);
    return it != by_rank.end() && it->second->answered && !it->second->waiting_on.empty();
  };
  const auto in_collective = [&](int rank) {
    const auto it = by_rank.find(rank);
    return it != by_rank.end() && it->second->answered && it->second->waiting_seq.has_value();
  };
  const auto waits_on = [&](int rank, int peer) {
    const auto it = by_rank.find(rank);
    if (it == by_rank.end()) return false;
    const auto& on = it->second->waiting_on;
    return std::find(on.begin(), on.end(), peer) != on.end();
  };
  std::set<int> ends;
  std::map<int, std::pair<int, int>> score;  // pointed at by, and waits on in turn
  for (const auto& r : ranks) {
    if (!r.answered) continue;
    for (const int peer : std::set<int>(r.waiting_on.begin(), r.waiting_on.end())) {
      if (peer == r.rank) continue;
      if (!waits(peer) && !in_collective(peer)) {
        ends.insert(peer);
      } else if (waits(peer)) {
        ++score[peer].first;
        if (waits_on(peer, r.rank)) ++score[peer].second;
      }
    }
  }
  if (!ends.empty()) return {ends.begin(), ends.end()};
  std::vector<int> best;
  std::pair<int, int> top{0, 0};
  for (const auto& [rank, s] : score) {
    if (s > top) {
      top = s;
      best = {rank};
    } else if (s == top) {
      best.push_back(rank);
    }
  }
  return best.size() == 1 ? best : std::vector<int>{};
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) text += (i ? "," : "") + std::to_string(ranks[i]);
  return text;
}

HangVerdict judge_hang(const std::vector<RankProgress>& ranks) {
  std::vector<const RankProgress*> answered;
  std::vector<int> silent;
  for (const auto& r : ranks) {
    if (r.answered)
      answered.push_back(&r);
    else
      silent.push_back(r.rank);
  }
  // The ranks behind: those that did not answer, and those that answered from the least position.
  std::uint64_t least = UINT64_MAX, most = 0;
  for (const auto* r : answered) {
    least = std::min(least, position(*r));
    most = std::max(most, position(*r));
  }
  std::vector<int> behind = blamed_by_waits(ranks);
  if (behind.empty()) {
    behind = silent;
    if (least != most)
      for (const auto* r : answered)
        if (position(*r) == least) behind.push_back(r->rank);
  }
  std::sort(behind.begin(), behind.end());

  // What the ranks ahead wait in: the collective the ones behind did not finish.
  std::string waited_op;
  std::uint64_t waited_seq = 0;
  for (const auto* r : answered)
    if (r->waiting_seq && (behind.empty() || std::find(behind.begin(), behind.end(), r->rank) == behind.end()) &&
        (waited_seq == 0 || *r->waiting_seq < waited_seq)) {
      waited_seq = *r->waiting_seq;
      waited_op = r->waiting_in;
    }
  for (const auto* r : answered)
    if (std::find(behind.begin(), behind.end(), r->rank) != behind.end())
      waited_seq = waited_seq == 0 ? next_unfinished(*r) : std::min(waited_seq, next_unfinished(*r));

  // Nobody waits inside a collective (the others wait in the collective check before it, or elsewhere):
  // the one behind did not finish the next collective the others have not issued.
  if (waited_seq == 0)
    for (const auto* r : answered)
      waited_seq = waited_seq == 0 ? next_unfinished(*r) : std::min(waited_seq, next_unfinished(*r));
  HangVerdict verdict;
  const std::string collective = (waited_op.empty() ? "collective" : waited_op.substr(0, waited_op.find(" of "))) +
                                 " #" + std::to_string(waited_seq);
  if (!behind.empty()) {
    verdict.summary = rank_list(behind) + " did not finish " + collective;
  } else {
    // Every rank is at the same place: in the same collective number but a different call, or waiting
    // in a collective for something outside the flight recorder (point-to-point, another communicator).
    std::map<std::string, std::vector<int>> calls;
    for (const auto* r : answered) calls[r->waiting_in].push_back(r->rank);
    if (calls.size() > 1) {
      verdict.summary = "ranks disagree on collective #" + std::to_string(waited_seq) + ":";
      for (const auto& [call, who] : calls)
        verdict.summary += " " + rank_list(who) + " " + (call.empty() ? "none" : call) + ";";
      verdict.summary.pop_back();
    } else {
      verdict.summary = "every rank waits in " + collective;
    }
  }
  verdict.message = verdict.summary + ": " + describe_ranks(ranks);
  return verdict;
}

}  // namespace gradsweep::comm
