#pragma once
// The in-memory transport under the thread-ranks harness (thread_ranks.hpp): what MPI is to the MPI
// backend. Ranks are threads of one process; a collective is matched by its place in each rank's call
// order (one order for blocking calls, one for asynchronous ones, as the MPI backend's separate
// communicators give), and the last rank to join it carries it out for all of them, writing into every
// rank's output. Point-to-point messages are copied into the receiver's mailbox at send (an eager send
// never blocks) and taken in MPI's order: the first message in arrival order that matches source and tag.
//
// A run never hangs: when a rank fails (fail()), every rank waiting in a call, or entering one later, gets
// an error naming it; when every rank still running is waiting for something no one can provide any more
// (a deadlock, a rank that returned without joining), the waits end with a message listing what each rank
// waits for; a wait longer than the timeout (a rank busy elsewhere) ends the same way.
//
// Sub-communicators (Communicator::split, ::group) are contexts of the same hub, as MPI's communicators
// are contexts of one transport: context 0 is every rank, and each split makes one context per color,
// whose members are world ranks in the group's order. Collectives and messages match within a context
// only; failures, waits and the deadlock check are the hub's, over world ranks, so that a rank waiting in
// a group hears of a failure anywhere at once.
#include <gradsweep/sdk/services.hpp>

#include <torch/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace gradsweep::test {

enum class CollectiveKind { Allreduce, Broadcast, Allgather, ReduceScatter, Barrier };
enum class Channel { Blocking = 0, Async = 1 };

// One rank's part in a collective. Allreduce and broadcast read and write `output` (input is the same
// tensor); reduce_scatter and allgather read `input` and write `output`. The tensors are held until the
// collective has run.
struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::Barrier;
  sdk::Algorithm algorithm = sdk::Algorithm::Native;
  sdk::ReduceOp op = sdk::ReduceOp::Sum;
  int root = 0;
  torch::Tensor input, output;
  std::string what;  // "allreduce of 10 float32 (40 bytes)": for messages
};

// A collective some ranks have joined: done once the last one has, with an error when they disagreed.
struct PendingCollective {
  std::string name;  // "call #3", "node call #3" (the context's channel's call number on every rank)
  int context = 0;
  std::vector<std::optional<CollectiveCall>> calls;
  int joined = 0;
  bool done = false;
  std::string error;  // set when the ranks' calls do not match
};

struct Message {
  int source = -1;  // the sender's rank in the message's context
  int tag = 0;
  torch::Tensor payload;
};

// A run that failed: the rank that failed first and its message, or rank -1 when no rank failed but the
// ranks could not go on (deadlock, timeout, collectives left unfinished).
struct HubFailure {
  int rank = -1;
  std::string message;
};

// What a rank gets from a call once the run has failed: the failure, seen from that rank's call.
class RunAborted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class RankHub {
 public:
  RankHub(int size, std::chrono::milliseconds timeout);

  int size() const { return size_; }

  // The context of color `color` of the `split`-th split (counted per parent context) of `parent`: made
  // by the first of its members to ask, found by the others. `members`: world ranks, in group order.
  int context(int parent, std::uint64_t split, int color, const std::vector<int>& members, const std::string& name);

  // Joins this rank's next collective of `context` on `channel` and returns it; the last rank to join
  // runs it. `member`: the rank's place in the context; `rank`: its world rank. Throws RunAborted when the
  // run has failed.
  std::shared_ptr<PendingCollective> join(int context, int member, int rank, Channel channel, CollectiveCall call);
  // Blocks until `pending` has run; throws RunAborted (failure, deadlock, timeout) or std::runtime_error
  // (the ranks' calls did not match). `rank`: world rank.
  void wait(int rank, const PendingCollective& pending, const std::string& what);

  // A message in `context` from its member `source` (world rank `source_rank`) to world rank `dest`.
  void post(int context, int source, int source_rank, int dest, int tag, torch::Tensor payload);
  // Blocks until a message of `context` for world rank `rank` from member `source` (sdk::kAnySource: any)
  // with `tag` has arrived, and takes it.
  Message take(int context, int rank, int source, int tag, const std::string& what);

  // Rank `rank` failed with `message`: the first failure of a run is the one every rank hears of.
  void fail(int rank, const std::string& message);
  // Rank `rank` returned: it joins nothing more (a rank waiting for it is deadlocked).
  void finished(int rank);
  std::optional<HubFailure> failure() const;
  // Collectives some ranks joined and others never did (checked after every rank returned).
  std::string unfinished() const;

 private:
  using Lock = std::unique_lock<std::mutex>;
  struct Waiter {
    std::string what;
    std::function<bool()> ready;
  };
  struct Context {
    std::string name;          // "" for every rank; "node", "split(3)" for groups
    std::vector<int> members;  // world ranks, in the context's rank order
  };

  void run(PendingCollective& pending);  // under the lock, by the last rank to join
  // Waits (under `lock`) until `ready()`; registers what this rank waits for, for deadlock messages.
  void block(Lock& lock, int rank, const std::string& what, const std::function<bool()>& ready);
  void check_failed(int rank, const std::string& what) const;
  bool deadlocked() const;
  std::string who_waits() const;
  void fail_locked(int rank, const std::string& message);

  const int size_;
  const std::chrono::milliseconds timeout_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Context> contexts_;                                                           // by id; 0 is every rank
  std::map<std::tuple<int, std::uint64_t, int>, int> context_ids_;                          // (parent, split, color)
  std::map<std::tuple<int, int, std::uint64_t>, std::shared_ptr<PendingCollective>> open_;  // (context, channel, n)
  std::map<std::pair<int, int>, std::array<std::uint64_t, 2>> next_;  // (context, rank): per channel
  std::map<std::pair<int, int>, std::deque<Message>> mailboxes_;      // (context, receiving rank)
  std::vector<std::optional<Waiter>> waiting_;                        // per rank
  std::vector<bool> finished_;
  std::optional<HubFailure> failure_;
};

}  // namespace gradsweep::test
