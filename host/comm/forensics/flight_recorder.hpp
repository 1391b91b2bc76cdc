#pragma once
// Each rank's record of its last communication calls (what PyTorch calls a flight recorder): a fixed ring
// of entries, preallocated, overwritten oldest first. When the job hangs or a rank fails, the buffer is
// dumped (comm/forensics/collective_forensics.hpp) so that the ranks' last calls can be compared.
//
// Recording costs a lock, three clock reads and a few stores per call; nothing is allocated.
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace gradsweep::comm {

// The calls recorded. Collectives share one sequence (1, 2, ...), numbered in the order this rank issued
// them, which is the order every rank must issue them in; point-to-point calls have their own.
enum class CommOp : std::uint8_t {
  Allreduce,
  Broadcast,
  Allgather,
  ReduceScatter,
  Barrier,
  AllreduceAsync,
  Send,
  Recv,
  RecvAny,
  ReduceScatterAsync,
  AllgatherAsync
};
const char* to_string(CommOp op);
bool is_collective(CommOp op);

enum class CallState : std::uint8_t { Issued, Running, Done, Failed };
const char* to_string(CallState state);

// What identifies a call across ranks: the fingerprint that runtime.check_collectives compares too.
struct CallShape {
  CommOp op = CommOp::Barrier;
  bool ring = false;        // gradsweep's ring algorithm rather than the library's
  std::int8_t reduce = -1;  // sdk::ReduceOp, -1 when the call reduces nothing
  std::int16_t dtype = -1;  // c10::ScalarType, -1 without a tensor
  std::int64_t count = 0;   // elements (allgather: this rank's input; reduce_scatter: the whole input)
  std::int32_t peer = -1;   // broadcast root, send destination, recv source; -1 none or any
  std::int32_t tag = -1;    // point-to-point tag
  std::uint64_t bytes = 0;

  bool operator==(const CallShape& o) const {
    return op == o.op && ring == o.ring && reduce == o.reduce && dtype == o.dtype && count == o.count && peer == o.peer;
  }
};

// "allreduce of 1024 float32 (4.0 KiB)" (the size when bytes > 0), "ring allreduce ...", "broadcast of ...
// from rank 0", "barrier".
std::string describe(const CallShape& shape);
std::string dtype_name(std::int16_t dtype);
std::string human_bytes(std::uint64_t bytes);

struct FlightEntry {
  std::uint64_t id = 0;   // 1, 2, ... over every call recorded; 0 = slot never used
  std::uint64_t seq = 0;  // collective number, or point-to-point number
  CallShape shape;
  CallState state = CallState::Issued;
  // Wall clock, nanoseconds since the Unix epoch (comparable between ranks whose clocks agree); 0 = not yet.
  std::int64_t issued_ns = 0, started_ns = 0, ended_ns = 0;
};

class FlightRecorder {
 public:
  static constexpr std::size_t kDefaultCapacity = 256;
  explicit FlightRecorder(std::size_t capacity = kDefaultCapacity);

  // Records a call as issued; returns its id for start() and finish(). `running` marks it started too
  // (a blocking call, which starts as it is issued).
  std::uint64_t issue(const CallShape& shape, bool running);
  void start(std::uint64_t id);
  void finish(std::uint64_t id, bool ok);

  // The entries still held, oldest first.
  std::vector<FlightEntry> entries() const;
  std::size_t capacity() const { return slots_.size(); }
  std::uint64_t collectives_issued() const;
  // The number of a call still held; 0 once overwritten.
  std::uint64_t seq_of(std::uint64_t id) const;
  // The highest collective number that finished (done or failed); 0 when none.
  std::uint64_t last_collective_finished() const;

  // A recorded call for as long as it lives: done when it ends normally, failed when it ends by an exception.
  class Scope {
   public:
    Scope(FlightRecorder& recorder, const CallShape& shape) : recorder_(recorder), id_(recorder.issue(shape, true)) {}
    // Issued first, then `before(seq)` (runtime.check_collectives' exchange: a rank waiting there shows
    // the call it is about to make), then running. A `before` that throws leaves the call failed.
    template <class Before>
    Scope(FlightRecorder& recorder, const CallShape& shape, Before&& before)
        : recorder_(recorder), id_(recorder.issue(shape, false)) {
      try {
        before(seq());
      } catch (...) {
        recorder_.finish(id_, false);
        id_ = 0;
        throw;
      }
      recorder_.start(id_);
    }
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    std::uint64_t seq() const;

   private:
    FlightRecorder& recorder_;
    std::uint64_t id_;
    int exceptions_ = std::uncaught_exceptions();
  };

 private:
  FlightEntry* find(std::uint64_t id);  // null once overwritten

  mutable std::mutex mutex_;
  std::vector<FlightEntry> slots_;
  std::uint64_t next_id_ = 1;
  std::uint64_t collectives_ = 0, point_to_point_ = 0;
  std::uint64_t last_finished_ = 0;
};

std::int64_t wall_clock_ns();

}  // namespace gradsweep::comm
