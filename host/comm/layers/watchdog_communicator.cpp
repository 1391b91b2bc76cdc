#include "comm/layers/watchdog_communicator.hpp"

#include "comm/forensics/collective_forensics.hpp"
#include "comm/core/dtype_name.hpp"
#include "comm/core/host_group.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

namespace gradsweep::comm {
namespace {

std::string seconds_text(double s) {
  std::ostringstream out;
  out.precision(3);
  out << s << " s";
  return out.str();
}

}  // namespace

std::string HangReport::message() const {
  return "rank " + std::to_string(rank) + " of " + std::to_string(size) + (group.empty() ? "" : " in group " + group) +
         ": " + call + " #" + std::to_string(seq) + " (" + what + ") did not finish within " +
         seconds_text(limit_seconds) + " (waited " + seconds_text(waited_seconds) + ")";
}

void end_process_on_hang(const HangReport& report) {
  const std::string message =
      "hang: " + report.message() + (report.verdict.empty() ? "" : "; the flight recorders say: " + report.verdict);
  spdlog::error("{}", message);
  forensics::write_verdict("hang", report.call + " #" + std::to_string(report.seq), message);
  spdlog::default_logger()->flush();
  std::fflush(nullptr);
  std::_Exit(kHangExitCode);
}

// What a watched call is, kept while it runs; its report's text is made only if it goes overdue, since this
// is kept for every call.
struct WatchdogCommunicator::Call {
  std::string name;  // "allreduce", "recv from rank 1"
  std::uint64_t seq = 0;
  bool has_tensor = false;
  std::int64_t numel = 0, bytes = 0;
  c10::ScalarType dtype = c10::ScalarType::Undefined;

  Call(std::string call, std::uint64_t number, const torch::Tensor& t) : name(std::move(call)), seq(number) {
    if (!t.defined()) return;
    has_tensor = true;
    numel = t.numel();
    bytes = numel * static_cast<std::int64_t>(t.element_size());
    dtype = t.scalar_type();
  }
};

// The calls in flight by key ("allreduce #3"), so that the watchdog's one-line description becomes a
// whole report when it fires.
struct WatchdogCommunicator::Watch {
  Watch(double limit, HangHandler handler, std::string group_name, CollectiveForensics* recorded, double grace,
        int at_rank, int of_size)
      : limit_seconds(limit),
        grace_seconds(grace),
        on_hang(std::move(handler)),
        group(std::move(group_name)),
        rank(at_rank),
        size(of_size),
        dumps(recorded) {
    timeout = std::make_unique<CollectiveTimeout>(
        std::chrono::duration<double>(limit_seconds),
        [this](const std::string& key, double waited) { fire(key, waited); },
        [this] {
          const std::lock_guard<std::mutex> lock(dumps_mutex);
          if (dumps != nullptr) dumps->poll_requests();
        });
  }

  // From the watchdog's thread: the overdue call's report, with what the ranks' dumps say.
  void fire(const std::string& key, double waited) {
    HangReport found;
    {
      const std::lock_guard<std::mutex> lock(mutex);
      const auto it = in_flight.find(key);
      if (it == in_flight.end()) return;
      found = report(it->second);
    }
    found.waited_seconds = waited;
    found.limit_seconds = limit_seconds;
    {
      const std::lock_guard<std::mutex> lock(dumps_mutex);
      if (dumps != nullptr) found.verdict = dumps->on_hang(found.message(), grace_seconds).message;
    }
    on_hang(found);
  }

  // The communicator goes: its recorder with it, though a request may keep this watch a little longer.
  void detach() {
    const std::lock_guard<std::mutex> lock(dumps_mutex);
    dumps = nullptr;
  }

  HangReport report(const Call& call) const {
    HangReport r;
    r.rank = rank;
    r.size = size;
    r.group = group;
    r.call = call.name;
    r.seq = call.seq;
    r.what = call.has_tensor ? call.name + " of " + std::to_string(call.numel) + " " + dtype_name(call.dtype) + " (" +
                                   std::to_string(call.bytes) + " bytes)"
                             : call.name;
    return r;
  }

  // One call in flight, from its start to its end (for an async call: its request's completion).
  class Tracked {
   public:
    Tracked(Watch& watch, const Call& call) : watch_(watch), key_(call.name + " #" + std::to_string(call.seq)) {
      {
        const std::lock_guard<std::mutex> lock(watch_.mutex);
        watch_.in_flight.insert_or_assign(key_, call);
      }
      scope_.emplace(*watch_.timeout, key_);
    }
    ~Tracked() {
      scope_.reset();
      const std::lock_guard<std::mutex> lock(watch_.mutex);
      watch_.in_flight.erase(key_);
    }
    Tracked(const Tracked&) = delete;
    Tracked& operator=(const Tracked&) = delete;

   private:
    Watch& watch_;
    const std::string key_;
    std::optional<CollectiveTimeout::Scope> scope_;
  };

  const double limit_seconds, grace_seconds;
  const HangHandler on_hang;
  const std::string group;
  const int rank, size;
  std::mutex dumps_mutex;
  CollectiveForensics* dumps;  // the recorder below, or null; guarded by dumps_mutex
  std::atomic<std::uint64_t> collectives{0}, point_to_point{0}, groups{0};
  std::mutex mutex;
  std::map<std::string, Call> in_flight;  // guarded by mutex
  // Last: its thread reads the members above until it is joined.
  std::unique_ptr<CollectiveTimeout> timeout;
};

namespace {

// An async call's request, watched while the caller waits for it or destroys it (which completes it), as
// a blocking call is watched. The operation runs beside the caller's compute: only the caller's wait is a
// wait, and watching from issue would take a long step between issue and wait for a hang.
class WatchedRequest final : public sdk::Request {
 public:
  // `track` starts watching the call (it ends when what it returns goes); it keeps the watch alive.
  WatchedRequest(std::unique_ptr<sdk::Request> inner, std::function<std::shared_ptr<void>()> track)
      : inner_(std::move(inner)), track_(std::move(track)) {}
  ~WatchedRequest() override {
    const std::shared_ptr<void> tracked = waited_ ? nullptr : watch();  // a waited call is complete already
    inner_.reset();
  }
  WatchedRequest(const WatchedRequest&) = delete;
  WatchedRequest& operator=(const WatchedRequest&) = delete;
  sdk::Status wait() noexcept override {
    if (!inner_) return sdk::Status::Ok();
    const std::shared_ptr<void> tracked = watch();
    const sdk::Status status = inner_->wait();
    waited_ = true;
    return status;
  }

 private:
  // Unwatched rather than not waited for, should watching fail (it allocates).
  std::shared_ptr<void> watch() noexcept {
    try {
      return track_();
    } catch (...) {
      return nullptr;
    }
  }

  std::unique_ptr<sdk::Request> inner_;
  std::function<std::shared_ptr<void>()> track_;
  bool waited_ = false;
};

}  // namespace

WatchdogCommunicator::WatchdogCommunicator(std::unique_ptr<HostCommunicator> next, double limit_seconds,
                                           HangHandler on_hang, double dump_grace_seconds)
    : CommunicatorLayer(std::move(next)) {
  watch_ = std::make_shared<Watch>(limit_seconds, std::move(on_hang), group_name(), forensics(), dump_grace_seconds,
                                   rank(), size());
}

WatchdogCommunicator::WatchdogCommunicator(sdk::Communicator& view, sdk::Algorithm algorithm,
                                           WatchdogCommunicator& owner)
    : CommunicatorLayer(view, algorithm, owner), watch_(owner.watch_), owns_watch_(false) {}

WatchdogCommunicator::~WatchdogCommunicator() {
  if (owns_watch_) watch_->detach();
}

std::unique_ptr<CommunicatorLayer> WatchdogCommunicator::over_group(std::unique_ptr<HostCommunicator> group) {
  return std::make_unique<WatchdogCommunicator>(std::move(group), watch_->limit_seconds, watch_->on_hang,
                                                watch_->grace_seconds);
}

template <class Body>
sdk::Status WatchdogCommunicator::watched(const std::string& call, Sequence sequence, const torch::Tensor& tensor,
                                          Body&& body) noexcept {
  const std::uint64_t seq = ++(sequence == Sequence::Collective     ? watch_->collectives
                               : sequence == Sequence::PointToPoint ? watch_->point_to_point
                                                                    : watch_->groups);
  std::optional<Watch::Tracked> tracked;
  if (sdk::Status s = sdk::guard([&] { tracked.emplace(*watch_, Call(call, seq, tensor)); }); !s.ok) return s;
  return body();
}

template <class Body>
sdk::Status WatchdogCommunicator::watched_async(const std::string& call, const torch::Tensor& tensor,
                                                std::unique_ptr<sdk::Request>* request, Body&& body) noexcept {
  const std::uint64_t seq = ++watch_->collectives;
  std::function<std::shared_ptr<void>()> track;
  std::shared_ptr<void> issuing;  // the issue is watched too: the layers below may wait in it (the collective check)
  if (sdk::Status s = sdk::guard([&] {
        track = [watch = watch_, what = Call(call, seq, tensor)]() -> std::shared_ptr<void> {
          return std::make_shared<Watch::Tracked>(*watch, what);
        };
        issuing = track();
      });
      !s.ok)
    return s;
  const sdk::Status status = body();
  issuing.reset();
  if (!status.ok || request == nullptr || !*request) return status;
  return sdk::guard([&] { *request = std::make_unique<WatchedRequest>(std::move(*request), std::move(track)); });
}

namespace {
std::string on_view(sdk::Algorithm algorithm, const char* call) { return algorithm_prefix(algorithm) + call; }
}  // namespace

sdk::Status WatchdogCommunicator::allreduce(torch::Tensor& tensor, sdk::ReduceOp op) noexcept {
  return watched(on_view(algorithm(), "allreduce"), Sequence::Collective, tensor,
                 [&] { return next().allreduce(tensor, op); });
}
sdk::Status WatchdogCommunicator::broadcast(torch::Tensor& tensor, int root) noexcept {
  return watched("broadcast", Sequence::Collective, tensor, [&] { return next().broadcast(tensor, root); });
}
sdk::Status WatchdogCommunicator::allgather(const torch::Tensor& input, torch::Tensor& output) noexcept {
  return watched(on_view(algorithm(), "allgather"), Sequence::Collective, input,
                 [&] { return next().allgather(input, output); });
}
sdk::Status WatchdogCommunicator::reduce_scatter(const torch::Tensor& input, torch::Tensor& output,
                                                 sdk::ReduceOp op) noexcept {
  return watched(on_view(algorithm(), "reduce_scatter"), Sequence::Collective, input,
                 [&] { return next().reduce_scatter(input, output, op); });
}
sdk::Status WatchdogCommunicator::barrier() noexcept {
  return watched("barrier", Sequence::Collective, torch::Tensor(), [&] { return next().barrier(); });
}
sdk::Status WatchdogCommunicator::send(const torch::Tensor& tensor, int dst, int tag) noexcept {
  return watched("send to rank " + std::to_string(dst), Sequence::PointToPoint, tensor,
                 [&] { return next().send(tensor, dst, tag); });
}
sdk::Status WatchdogCommunicator::recv(torch::Tensor& tensor, int src, int tag) noexcept {
  return watched("recv from rank " + std::to_string(src), Sequence::PointToPoint, tensor,
                 [&] { return next().recv(tensor, src, tag); });
}
sdk::Status WatchdogCommunicator::recv_any(torch::Tensor& tensor, int tag, int* source) noexcept {
  return watched("recv_any", Sequence::PointToPoint, tensor, [&] { return next().recv_any(tensor, tag, source); });
}
sdk::Status WatchdogCommunicator::allreduce_async(torch::Tensor& tensor, sdk::ReduceOp op,
                                                  std::unique_ptr<sdk::Request>* request) noexcept {
  return watched_async(on_view(algorithm(), "allreduce_async"), tensor, request,
                       [&] { return next().allreduce_async(tensor, op, request); });
}
sdk::Status WatchdogCommunicator::reduce_scatter_async(const torch::Tensor& input, torch::Tensor& output,
                                                       sdk::ReduceOp op,
                                                       std::unique_ptr<sdk::Request>* request) noexcept {
  return watched_async(on_view(algorithm(), "reduce_scatter_async"), input, request,
                       [&] { return next().reduce_scatter_async(input, output, op, request); });
}
sdk::Status WatchdogCommunicator::allgather_async(const torch::Tensor& input, torch::Tensor& output,
                                                  std::unique_ptr<sdk::Request>* request) noexcept {
  return watched_async(on_view(algorithm(), "allgather_async"), input, request,
                       [&] { return next().allgather_async(input, output, request); });
}

sdk::Status WatchdogCommunicator::split(int color, int key, std::unique_ptr<sdk::Group>* group) noexcept {
  return watched("split", Sequence::Group, torch::Tensor(),
                 [&] { return CommunicatorLayer::split(color, key, group); });
}
sdk::Status WatchdogCommunicator::group(sdk::GroupKind kind, std::unique_ptr<sdk::Group>* group) noexcept {
  return watched("group(" + group_kind_name(kind) + ")", Sequence::Group, torch::Tensor(),
                 [&] { return CommunicatorLayer::group(kind, group); });
}

}  // namespace gradsweep::comm
