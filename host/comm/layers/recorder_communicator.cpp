#include "comm/layers/recorder_communicator.hpp"

#include "comm/core/async_progress.hpp"
#include "comm/forensics/collective_fingerprint.hpp"
#include "comm/core/comm_ledger.hpp"
#include "comm/forensics/fault_injection.hpp"

#include <cstring>
#include <mutex>
#include <stdexcept>

namespace gradsweep::comm {

struct RecorderCommunicator::Shared {
  explicit Shared(const char* backend) : forensics(backend) {}
  CollectiveForensics forensics;
  const bool check = forensics::check_collectives();
  std::mutex check_mutex;  // one fingerprint exchange at a time, as the calls it checks are numbered
};

namespace {

// The request of an async call, recorded until it is waited for or destroyed (which completes it).
class RecordedRequest final : public sdk::Request {
 public:
  RecordedRequest(std::unique_ptr<sdk::Request> inner, std::shared_ptr<void> keep, FlightRecorder& recorder,
                  std::uint64_t id)
      : inner_(std::move(inner)), keep_(std::move(keep)), recorder_(recorder), id_(id) {}
  ~RecordedRequest() override {
    inner_.reset();
    if (id_ != 0) recorder_.finish(id_, true);
  }
  RecordedRequest(const RecordedRequest&) = delete;
  RecordedRequest& operator=(const RecordedRequest&) = delete;
  sdk::Status wait() noexcept override {
    const sdk::Status status = inner_ ? inner_->wait() : sdk::Status::Ok();
    if (id_ != 0) recorder_.finish(std::exchange(id_, 0), status.ok);
    return status;
  }

 private:
  std::unique_ptr<sdk::Request> inner_;
  std::shared_ptr<void> keep_;  // the recorder's owner
  FlightRecorder& recorder_;
  std::uint64_t id_;
};

// Entry `id` marked running and done as the backend's worker runs the call (comm/core/async_progress.hpp).
class RecordedProgress final : public AsyncProgress::Listener {
 public:
  RecordedProgress(std::shared_ptr<void> keep, FlightRecorder& recorder, std::uint64_t id)
      : keep_(std::move(keep)), recorder_(recorder), id_(id) {}
  void started() override { recorder_.start(id_); }
  void finished(bool ok) override { recorder_.finish(id_, ok); }

 private:
  std::shared_ptr<void> keep_;  // the recorder's owner
  FlightRecorder& recorder_;
  std::uint64_t id_;
};

CallShape with_tag(CallShape shape, int tag) {
  shape.tag = tag;
  return shape;
}

// This rank's job rank as every member of `group` sees it: one int64 per rank, over the group itself.
std::vector<int> members_of(HostCommunicator& group, int job_rank) {
  torch::Tensor mine = torch::full({1}, static_cast<std::int64_t>(job_rank), torch::kInt64);
  torch::Tensor all = torch::empty({group.size()}, torch::kInt64);
  {
    const CommLedger::Uncounted quiet;
    sdk::check(group.allgather(mine, all));
  }
  std::vector<int> ranks;
  for (std::int64_t i = 0; i < all.numel(); ++i) ranks.push_back(static_cast<int>(all[i].item<std::int64_t>()));
  return ranks;
}

}  // namespace

RecorderCommunicator::RecorderCommunicator(std::unique_ptr<HostCommunicator> next)
    : CommunicatorLayer(std::move(next)), native_(CommunicatorLayer::next()), job_rank_(rank()) {
  shared_ = std::make_shared<Shared>(backend());
  shared_->forensics.set_rank(rank(), size());
  // Aliasing: the transport keeps the whole record alive while a call of its worker may still post a wait.
  transport().report_peer_waits_to(std::shared_ptr<PeerWaits>(shared_, &shared_->forensics.peer_waits()));
}

RecorderCommunicator::RecorderCommunicator(sdk::Communicator& view, sdk::Algorithm algorithm,
                                           RecorderCommunicator& owner)
    : CommunicatorLayer(view, algorithm, owner),
      shared_(owner.shared_),
      native_(owner.native_),
      job_rank_(owner.job_rank_) {}

RecorderCommunicator::RecorderCommunicator(std::unique_ptr<HostCommunicator> group, const std::vector<int>& job_ranks)
    : RecorderCommunicator(std::move(group)) {
  const auto at = static_cast<std::size_t>(rank());
  job_rank_ = at < job_ranks.size() ? job_ranks[at] : rank();
  shared_->forensics.set_group(group_name(), job_ranks);
}

std::unique_ptr<CommunicatorLayer> RecorderCommunicator::over_group(std::unique_ptr<HostCommunicator> group) {
  const std::vector<int> job_ranks = members_of(*group, job_rank_);
  return std::make_unique<RecorderCommunicator>(std::move(group), job_ranks);
}

const FlightRecorder* RecorderCommunicator::flight_recorder() { return &shared_->forensics.recorder(); }
CollectiveForensics* RecorderCommunicator::forensics() { return &shared_->forensics; }

void RecorderCommunicator::check_same_call(const CallShape& shape, std::uint64_t seq) {
  const std::lock_guard<std::mutex> lock(shared_->check_mutex);
  const Fingerprint mine = fingerprint_of(seq, shape);
  constexpr auto kBytes = static_cast<std::int64_t>(sizeof(Fingerprint));
  torch::Tensor in = torch::empty({kBytes}, torch::kUInt8);
  std::memcpy(in.data_ptr(), &mine, sizeof mine);
  torch::Tensor all = torch::empty({kBytes * size()}, torch::kUInt8);
  {
    const CommLedger::Uncounted quiet;
    const sdk::Status exchanged = native_.allgather(in, all);
    if (!exchanged.ok)
      throw std::runtime_error("the collective check before " + describe(shape) + " #" + std::to_string(seq) + ": " +
                               exchanged.message);
  }
  std::vector<Fingerprint> fingerprints(static_cast<std::size_t>(size()));
  std::memcpy(fingerprints.data(), all.data_ptr(), fingerprints.size() * sizeof(Fingerprint));
  if (const auto mismatch = first_mismatch(fingerprints)) {
    const std::string message = "collective mismatch (runtime.check_collectives): " + *mismatch;
    shared_->forensics.dump(message);
    if (rank() == 0)
      forensics::write_verdict("mismatch", std::string(to_string(shape.op)) + " #" + std::to_string(seq), message);
    throw std::runtime_error(message);
  }
}

std::uint64_t RecorderCommunicator::issue(const CallShape& shape, bool start) {
  fault_injection::check_call(job_rank_, shape);
  FlightRecorder& recorder = shared_->forensics.recorder();
  const bool check = shared_->check && is_collective(shape.op);
  const std::uint64_t id = recorder.issue(shape, start && !check);
  if (!check) return id;
  try {
    check_same_call(shape, recorder.seq_of(id));
  } catch (...) {
    recorder.finish(id, false);
    throw;
  }
  if (start) recorder.start(id);
  return id;
}

template <class Body>
sdk::Status RecorderCommunicator::recorded(const CallShape& shape, Body&& body) noexcept {
  std::uint64_t id = 0;
  if (sdk::Status s = sdk::guard([&] { id = issue(shape, true); }); !s.ok) return s;
  const sdk::Status status = body();
  shared_->forensics.recorder().finish(id, status.ok);
  return status;
}

template <class Body>
sdk::Status RecorderCommunicator::recorded_async(const CallShape& shape, std::unique_ptr<sdk::Request>* request,
                                                 Body&& body) noexcept {
  std::uint64_t id = 0;
  if (sdk::Status s = sdk::guard([&] { id = issue(shape, false); }); !s.ok) return s;
  FlightRecorder& recorder = shared_->forensics.recorder();
  sdk::Status status;
  bool claimed = false;
  {
    // A backend that queues the call marks it running and done as its worker runs it (comm/core/async_progress.hpp).
    const AsyncProgress::Issuing issuing(std::make_shared<RecordedProgress>(shared_, recorder, id));
    status = body();
    claimed = issuing.claimed();
  }
  if (claimed) return status;  // the entry is the backend's to mark from here on
  recorder.start(id);
  if (!status.ok || request == nullptr || !*request) {
    recorder.finish(id, status.ok);
    return status;
  }
  return sdk::guard([&] { *request = std::make_unique<RecordedRequest>(std::move(*request), shared_, recorder, id); });
}

sdk::Status RecorderCommunicator::allreduce(torch::Tensor& tensor, sdk::ReduceOp op) noexcept {
  return recorded(call_shape(CommOp::Allreduce, tensor, static_cast<int>(op), -1, ring()),
                  [&] { return next().allreduce(tensor, op); });
}
sdk::Status RecorderCommunicator::broadcast(torch::Tensor& tensor, int root) noexcept {
  return recorded(call_shape(CommOp::Broadcast, tensor, -1, root), [&] { return next().broadcast(tensor, root); });
}
sdk::Status RecorderCommunicator::allgather(const torch::Tensor& input, torch::Tensor& output) noexcept {
  return recorded(call_shape(CommOp::Allgather, input, -1, -1, ring()),
                  [&] { return next().allgather(input, output); });
}
sdk::Status RecorderCommunicator::reduce_scatter(const torch::Tensor& input, torch::Tensor& output,
                                                 sdk::ReduceOp op) noexcept {
  return recorded(call_shape(CommOp::ReduceScatter, input, static_cast<int>(op), -1, ring()),
                  [&] { return next().reduce_scatter(input, output, op); });
}
sdk::Status RecorderCommunicator::send(const torch::Tensor& tensor, int dst, int tag) noexcept {
  return recorded(with_tag(call_shape(CommOp::Send, tensor, -1, dst), tag),
                  [&] { return next().send(tensor, dst, tag); });
}
sdk::Status RecorderCommunicator::recv(torch::Tensor& tensor, int src, int tag) noexcept {
  return recorded(with_tag(call_shape(CommOp::Recv, tensor, -1, src), tag),
                  [&] { return next().recv(tensor, src, tag); });
}
sdk::Status RecorderCommunicator::recv_any(torch::Tensor& tensor, int tag, int* source) noexcept {
  return recorded(with_tag(call_shape(CommOp::RecvAny, tensor), tag),
                  [&] { return next().recv_any(tensor, tag, source); });
}
sdk::Status RecorderCommunicator::barrier() noexcept {
  CallShape shape;
  shape.op = CommOp::Barrier;
  return recorded(shape, [&] { return next().barrier(); });
}
sdk::Status RecorderCommunicator::allreduce_async(torch::Tensor& tensor, sdk::ReduceOp op,
                                                  std::unique_ptr<sdk::Request>* request) noexcept {
  return recorded_async(call_shape(CommOp::AllreduceAsync, tensor, static_cast<int>(op), -1, ring()), request,
                        [&] { return next().allreduce_async(tensor, op, request); });
}
sdk::Status RecorderCommunicator::reduce_scatter_async(const torch::Tensor& input, torch::Tensor& output,
                                                       sdk::ReduceOp op,
                                                       std::unique_ptr<sdk::Request>* request) noexcept {
  return recorded_async(call_shape(CommOp::ReduceScatterAsync, input, static_cast<int>(op), -1, ring()), request,
                        [&] { return next().reduce_scatter_async(input, output, op, request); });
}
sdk::Status RecorderCommunicator::allgather_async(const torch::Tensor& input, torch::Tensor& output,
                                                  std::unique_ptr<sdk::Request>* request) noexcept {
  return recorded_async(call_shape(CommOp::AllgatherAsync, input, -1, -1, ring()), request,
                        [&] { return next().allgather_async(input, output, request); });
}

}  // namespace gradsweep::comm
