#pragma once
// A communicator's traffic counters, and the link that makes a sub-communicator's (sdk::Group's) traffic
// count twice: in its own counters and in its parent's, both in the parent's totals (so the trainer's
// per-step `comm` figures include it) and under the group's name (metrics' comm.groups.<name>).
//
// The ledger is shared (shared_ptr) between the communicator that owns it and the groups split from it,
// so a group can outlive its parent safely: the parent closes its ledger when it goes, and the group,
// which still holds the ledger, sees that instead of touching freed memory.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace gradsweep::comm {

struct CommStats {
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  // Busy time: wall time communication was in progress for this rank, i.e. blocking calls plus the
  // time asynchronous operations ran on the backend's worker (whether or not anyone waited for them).
  double seconds = 0.0;
  std::uint64_t calls = 0;
  // The sum over calls of nccl-tests' S (the collective's size: the tensor for allreduce/broadcast/send/
  // recv, the full input of reduce_scatter, the full output of allgather), so algbw = payload_bytes / seconds.
  std::uint64_t payload_bytes = 0;
  // Time the calling threads spent blocked: inside blocking calls and inside Request::wait (or a request's
  // destructor). With one calling thread, blocked_seconds <= seconds, and 1 - blocked/busy is the
  // fraction of communication hidden behind computation.
  double blocked_seconds = 0.0;

  CommStats& operator+=(const CommStats& o) {
    bytes_sent += o.bytes_sent;
    bytes_received += o.bytes_received;
    seconds += o.seconds;
    calls += o.calls;
    payload_bytes += o.payload_bytes;
    blocked_seconds += o.blocked_seconds;
    return *this;
  }
};

// Per group name, what the groups split from a communicator moved.
using GroupStats = std::map<std::string, CommStats>;

class CommLedger {
 public:
  CommLedger() = default;
  // A group's ledger: what it counts is added to `parent`'s totals and under `name` there.
  CommLedger(std::shared_ptr<CommLedger> parent, std::string name);

  // From any thread: into this ledger's totals, then up the chain of parents that still exist.
  void add(const CommStats& delta);
  // The totals since the last take; the groups' figures of the same interval are kept for take_groups.
  CommStats take();
  // The groups' figures of the interval the last take() ended (empty before any).
  GroupStats take_groups();
  double blocked_so_far();

  // The owning communicator is gone: groups stop adding here and report their parent destroyed.
  void close();
  // Whether this ledger's communicator, or any above it, is gone (a group of a closed parent is unusable).
  bool parent_gone() const;
  const std::string& name() const { return name_; }

  // While one lives, what this thread adds to any ledger is not counted: the stack's own bookkeeping
  // (the recorder layer's fingerprint and member exchanges) moves bytes that no strategy asked for.
  class Uncounted {
   public:
    Uncounted();
    ~Uncounted();
    Uncounted(const Uncounted&) = delete;
    Uncounted& operator=(const Uncounted&) = delete;
  };

 private:
  bool closed() const;
  void add_from_group(const std::string& name, const CommStats& delta);

  const std::shared_ptr<CommLedger> parent_;
  const std::string name_;
  mutable std::mutex mutex_;
  CommStats totals_;           // guarded by mutex_
  GroupStats groups_, taken_;  // guarded by mutex_
  bool closed_ = false;        // guarded by mutex_
};

}  // namespace gradsweep::comm
