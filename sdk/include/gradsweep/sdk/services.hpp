#pragma once
// Services the host lends to plugins: logging, metrics, and the communicator.
//
// These are implemented in the host and called from plugins, so like every boundary call they are
// `noexcept` and report failure as a Status. The small inline helpers at the bottom are compiled into
// the plugin and turn a failed Status back into an exception on the plugin's side.
#include <gradsweep/sdk/capabilities.hpp>
#include <gradsweep/sdk/options.hpp>
#include <gradsweep/sdk/status.hpp>

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>

namespace gradsweep::sdk {

enum class LogLevel : std::uint32_t { Debug = 0, Info = 1, Warn = 2, Error = 3 };

class Logger {
 public:
  virtual void log(LogLevel level, const std::string& message) noexcept = 0;

  void debug(const std::string& m) noexcept { log(LogLevel::Debug, m); }
  void info(const std::string& m) noexcept { log(LogLevel::Info, m); }
  void warn(const std::string& m) noexcept { log(LogLevel::Warn, m); }
  void error(const std::string& m) noexcept { log(LogLevel::Error, m); }

 protected:
  ~Logger() = default;
};

// Per-step scalars a plugin wants in metrics.jsonl (e.g. "staleness", "loss_scale"). The host adds
// them to the current step's record; the last value recorded under a name in a step wins.
class MetricsSink {
 public:
  virtual void record(const std::string& name, double value) noexcept = 0;

 protected:
  ~MetricsSink() = default;
};

enum class ReduceOp : std::uint32_t { Sum = 0, Max = 1, Min = 2 };

// How allreduce, reduce_scatter and allgather are carried out. `Native` is the backend's own
// (MPI_Allreduce, ncclAllReduce); `Ring` is gradsweep's bandwidth-optimal ring over the backend's
// point-to-point (host/comm/algorithms/), so strategies can compare the two on equal terms.
// `Hierarchical` (ABI 1.3; MPI backend only) runs allreduce as a reduce-scatter inside each node, an
// allreduce of the shards across nodes and an all-gather inside the node; reduce_scatter and allgather
// run as Ring. Where nodes have unequal numbers of ranks its allreduce is the flat ring (logged).
enum class Algorithm : std::uint32_t { Native = 0, Ring = 1, Hierarchical = 2 };

// recv_any's source for "whichever rank sends first".
inline constexpr int kAnySource = -1;

// An asynchronous collective in flight. Destroying it without `wait` is allowed: the host completes it.
class Request {
 public:
  virtual ~Request() = default;
  virtual Status wait() noexcept = 0;
};

class Group;

// The ready-made groups of Communicator::group (ABI 1.8). `Node`: the ranks of this communicator on this
// rank's node, numbered by their rank here (what a hybrid strategy shards over). `AcrossNodes`: one rank
// per node, the ones with this rank's local_rank, numbered by node (what it replicates over).
enum class GroupKind : std::uint32_t { Node = 0, AcrossNodes = 1 };

// Collectives over all ranks of the job. Tensors must be contiguous; the backend (MPI for CPU tensors,
// NCCL for CUDA tensors, or the one-rank backend) is chosen by the host. Every call counts the bytes it
// sends and receives and the time it takes; the host reports both per step.
class Communicator {
 public:
  virtual int rank() const noexcept = 0;
  virtual int size() const noexcept = 0;
  virtual int local_rank() const noexcept = 0;
  virtual int local_size() const noexcept = 0;
  virtual const char* backend() const noexcept = 0;

  virtual Status allreduce(torch::Tensor& tensor, ReduceOp op) noexcept = 0;
  virtual Status broadcast(torch::Tensor& tensor, int root) noexcept = 0;
  // output is size() times the size of input, rank-major.
  virtual Status allgather(const torch::Tensor& input, torch::Tensor& output) noexcept = 0;
  // input is size() times the size of output; rank r receives the reduced r-th chunk.
  virtual Status reduce_scatter(const torch::Tensor& input, torch::Tensor& output, ReduceOp op) noexcept = 0;
  virtual Status send(const torch::Tensor& tensor, int dst, int tag) noexcept = 0;
  virtual Status recv(torch::Tensor& tensor, int src, int tag) noexcept = 0;
  virtual Status barrier() noexcept = 0;
  // Starts the allreduce and returns at once; it progresses (on a host thread) while the caller computes.
  // Async calls run in the order they were issued, on every rank alike.
  virtual Status allreduce_async(torch::Tensor& tensor, ReduceOp op, std::unique_ptr<Request>* request) noexcept = 0;

  // ---- ABI 1.1 ----
  // The same ranks, with allreduce, allreduce_async, reduce_scatter and allgather carried out by
  // `algorithm`; everything else as here. The view is owned by this communicator and shares its counters.
  virtual Status with_algorithm(Algorithm algorithm, Communicator** view) noexcept = 0;
  // Receives from whichever rank's message with `tag` arrives first (a parameter server's inbox); `*source`
  // tells which. The message must have exactly tensor's size.
  virtual Status recv_any(torch::Tensor& tensor, int tag, int* source) noexcept = 0;

  // ---- ABI 1.4 ----
  // reduce_scatter and allgather, started and returned at once like allreduce_async and queued with it:
  // every async call of this communicator (and of its algorithm views) runs in issue order, on every rank
  // alike. Both tensors are held until the call completes; neither may be touched before wait().
  virtual Status reduce_scatter_async(const torch::Tensor& input, torch::Tensor& output, ReduceOp op,
                                      std::unique_ptr<Request>* request) noexcept = 0;
  virtual Status allgather_async(const torch::Tensor& input, torch::Tensor& output,
                                 std::unique_ptr<Request>* request) noexcept = 0;
  // What this communicator offers on its ranks (kPointToPoint, kRecvAny, kRingAlgorithm, ...; see
  // capabilities.hpp). A call to a feature it lacks fails with a Status; the planner asks the same
  // question of the backend a cell will get, so that a strategy can refuse the cell before it runs.
  virtual CommFeatures features() const noexcept = 0;

  // ---- ABI 1.8 ----
  // Sub-communicators (features() & kGroups). The ranks that pass the same `color` (>= 0) form one group,
  // numbered by `key`, ties broken by their rank here; a negative color is refused, so that no rank is
  // left in no group. Collective: every rank of this communicator calls it, at the same point of its
  // sequence of calls. The group is the caller's; its traffic counts in this communicator's totals and
  // under the group's own name. A group used after this communicator is gone fails with a Status naming
  // it, and never touches freed memory.
  virtual Status split(int color, int key, std::unique_ptr<Group>* group) noexcept = 0;
  // A ready-made split (GroupKind); collective like split.
  virtual Status group(GroupKind kind, std::unique_ptr<Group>* group) noexcept = 0;

 protected:
  ~Communicator() = default;
};

// A sub-communicator (ABI 1.8): every Communicator call, over the group's ranks, numbered 0..size()-1.
// local_rank and local_size describe the group's ranks on this node.
class Group : public Communicator {
 public:
  virtual ~Group() = default;
  // "node", "across_nodes", "split(3)": how its traffic is labelled in metrics and errors.
  virtual const char* name() const noexcept = 0;
};

// Everything a plugin receives when it is created. The references stay valid for the object's life.
struct PluginContext {
  const Options& options;
  Logger& log;
  MetricsSink& metrics;
  Communicator& comm;
  torch::Device device;
};

// Plugin-side conveniences: throw on failure, so plugin code reads like ordinary C++. One for every
// Communicator call that returns a Status (compiled into the plugin: adding one changes no ABI).
namespace collective {
inline void allreduce(Communicator& c, torch::Tensor& t, ReduceOp op = ReduceOp::Sum) { check(c.allreduce(t, op)); }
inline void broadcast(Communicator& c, torch::Tensor& t, int root) { check(c.broadcast(t, root)); }
inline void barrier(Communicator& c) { check(c.barrier()); }
inline void send(Communicator& c, const torch::Tensor& t, int dst, int tag) { check(c.send(t, dst, tag)); }
inline void recv(Communicator& c, torch::Tensor& t, int src, int tag) { check(c.recv(t, src, tag)); }
// Returns the rank whose message arrived.
inline int recv_any(Communicator& c, torch::Tensor& t, int tag) {
  int source = kAnySource;
  check(c.recv_any(t, tag, &source));
  return source;
}
inline void reduce_scatter(Communicator& c, const torch::Tensor& in, torch::Tensor& out, ReduceOp op = ReduceOp::Sum) {
  check(c.reduce_scatter(in, out, op));
}
inline void allgather(Communicator& c, const torch::Tensor& in, torch::Tensor& out) { check(c.allgather(in, out)); }
inline std::unique_ptr<Request> allreduce_async(Communicator& c, torch::Tensor& t, ReduceOp op = ReduceOp::Sum) {
  std::unique_ptr<Request> request;
  check(c.allreduce_async(t, op, &request));
  return request;
}
inline std::unique_ptr<Request> reduce_scatter_async(Communicator& c, const torch::Tensor& in, torch::Tensor& out,
                                                     ReduceOp op = ReduceOp::Sum) {
  std::unique_ptr<Request> request;
  check(c.reduce_scatter_async(in, out, op, &request));
  return request;
}
inline std::unique_ptr<Request> allgather_async(Communicator& c, const torch::Tensor& in, torch::Tensor& out) {
  std::unique_ptr<Request> request;
  check(c.allgather_async(in, out, &request));
  return request;
}
inline void wait(std::unique_ptr<Request>& request) {
  if (request) check(request->wait());
  request.reset();
}
inline std::unique_ptr<Group> split(Communicator& c, int color, int key) {
  std::unique_ptr<Group> group;
  check(c.split(color, key, &group));
  return group;
}
inline std::unique_ptr<Group> group(Communicator& c, GroupKind kind) {
  std::unique_ptr<Group> g;
  check(c.group(kind, &g));
  return g;
}
inline Communicator& with_algorithm(Communicator& c, Algorithm a) {
  Communicator* view = nullptr;
  check(c.with_algorithm(a, &view));
  return *view;
}
}  // namespace collective

}  // namespace gradsweep::sdk
