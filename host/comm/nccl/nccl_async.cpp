// The NCCL backend's asynchronous collectives (allreduce, reduce_scatter, allgather) and their requests.
// Each is enqueued on the backend's own stream after an event on the caller's stream, so it starts once
// the tensors it reads are computed and runs beside whatever the caller queues next; one stream keeps
// them in issue order.
//
// Flight recorder: running from the enqueue (the GPU takes it from there), done when its event has
// completed (seen by wait(), or by the watchdog's thread once a second for a request nobody waits for
// yet), failed when wait() fails.
#include "comm/nccl/nccl_communicator.hpp"

#include <atomic>

namespace gradsweep::comm {

using nccl::device_buffer;
using nccl::DeviceBuffer;
using nccl::nccl_op;

// An async NCCL call in flight on the async stream. Holds the tensors so their memory outlives it:
// `buffer` is the result (copied back by wait() when staged), `held` the input when it is another tensor.
class NcclRequest final : public sdk::Request {
 public:
  NcclRequest(NcclCommunicator& owner, DeviceBuffer buffer, torch::Tensor held, cudaEvent_t started, cudaEvent_t done,
              std::string what)
      : owner_(&owner),
        buffer_(std::move(buffer)),
        held_(std::move(held)),
        started_(started),
        done_event_(done),
        what_(std::move(what)) {}
  ~NcclRequest() override {
    wait();  // destroying an un-waited request completes it
    // Out of the set before its events go: the watchdog's thread queries them under requests_mutex_.
    if (owner_ != nullptr) {
      const std::lock_guard<std::mutex> lock(owner_->requests_mutex_);
      owner_->requests_.erase(this);
    }
    cudaEventDestroy(started_);
    cudaEventDestroy(done_event_);
  }

  // Once enqueued (before, the done event, never recorded, would read as complete): the recorder's entry
  // `flight_id` is this request's to finish, and the communicator looks at its event from now on.
  void track(std::uint64_t flight_id) {
    flight_id_ = flight_id;
    const std::lock_guard<std::mutex> lock(owner_->requests_mutex_);
    owner_->requests_.insert(this);
  }

  // Synchronises with the collective (the host, and the caller's stream with it), then copies a staged
  // result back. Busy time is the GPU's time between the events around the collective.
  sdk::Status wait() noexcept override {
    if (done_) return result_;
    const auto t0 = NcclCommunicator::Clock::now();
    double busy = 0.0;
    result_ = sdk::guard([&] {
      owner_->wait_for(done_event_, what_);
      record_end(true);
      owner_->check_cuda(cudaStreamWaitEvent(nccl_caller_stream(owner_->device_), done_event_, 0), what_,
                         "cudaStreamWaitEvent");
      float ms = 0.0f;
      if (cudaEventElapsedTime(&ms, started_, done_event_) == cudaSuccess) busy = ms / 1e3;
      buffer_.finish();
    });
    record_end(result_.ok);  // a failed wait_for: after the dumps, which showed it still running
    done_ = true;
    buffer_ = DeviceBuffer{};
    held_ = torch::Tensor();
    CommStats delta;
    delta.blocked_seconds = NcclCommunicator::seconds_since(t0);
    delta.seconds = busy;
    owner_->add_stats(delta);
    return result_;
  }

  // Under the owner's requests_mutex_, from any thread.
  void note_if_done() {
    if (!ended_.load() && cudaEventQuery(done_event_) == cudaSuccess) record_end(true);
  }

  // The communicator is going away: finish now and stop referring to it.
  void complete_and_detach() {
    wait();
    owner_ = nullptr;
  }

 private:
  void record_end(bool ok) {
    if (flight_id_ != 0 && owner_ != nullptr && !ended_.exchange(true))
      owner_->forensics_.recorder().finish(flight_id_, ok);
  }

  NcclCommunicator* owner_;
  DeviceBuffer buffer_;
  torch::Tensor held_;
  cudaEvent_t started_, done_event_;
  std::string what_;
  std::uint64_t flight_id_ = 0;  // 0 until enqueued
  std::atomic<bool> ended_{false};
  bool done_ = false;
  sdk::Status result_;
};

void NcclCommunicator::refresh_async() {
  const std::lock_guard<std::mutex> lock(requests_mutex_);
  if (requests_.empty()) return;
  // The watchdog's thread has no current device yet: without this its first CUDA call would make a context
  // on GPU 0, whatever this rank's GPU.
  cudaSetDevice(device_);
  for (NcclRequest* r : requests_) r->note_if_done();
}

void NcclCommunicator::drain_async() {
  std::set<NcclRequest*> pending;
  {
    const std::lock_guard<std::mutex> lock(requests_mutex_);
    pending.swap(requests_);
  }
  for (NcclRequest* r : pending) r->complete_and_detach();
}

// Bytes count at the start; the time inside this call is blocked time; its busy time is added by wait().
template <class Enqueue>
sdk::Status NcclCommunicator::enqueue_async(const CallShape& call, const char* function, DeviceBuffer result,
                                            torch::Tensor held, Traffic moved, std::unique_ptr<sdk::Request>* request,
                                            Enqueue&& enqueue) noexcept {
  const auto t0 = Clock::now();
  bool enqueued = false;
  sdk::Status status = sdk::guard([&] {
    const std::lock_guard<std::mutex> lock(issue_mutex_);
    check_usable();
    check_cuda(cudaSetDevice(device_), describe(call), "cudaSetDevice");
    // Issued in the caller's order, under issue_mutex_, so that its number is the same on every rank.
    const std::uint64_t id = forensics_.issue(call, true);
    const std::string what = numbered(call, forensics_.recorder().seq_of(id));
    try {
      cudaEvent_t ready = nullptr, started = nullptr, done = nullptr;
      check_cuda(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), what, "cudaEventCreate");
      const auto destroy_ready = std::unique_ptr<CUevent_st, decltype(&cudaEventDestroy)>(ready, &cudaEventDestroy);
      check_cuda(cudaEventCreate(&started), what, "cudaEventCreate");
      check_cuda(cudaEventCreate(&done), what, "cudaEventCreate");
      // The request owns the events from here.
      auto pending = std::make_unique<NcclRequest>(*this, result, std::move(held), started, done, what);
      check_cuda(cudaEventRecord(ready, nccl_caller_stream(device_)), what, "cudaEventRecord");
      check_cuda(cudaStreamWaitEvent(async_stream_, ready, 0), what, "cudaStreamWaitEvent");
      check_cuda(cudaEventRecord(started, async_stream_), what, "cudaEventRecord");
      check_nccl(enqueue(async_stream_), what, function);
      check_cuda(cudaEventRecord(done, async_stream_), what, "cudaEventRecord");
      pending->track(id);
      *request = std::move(pending);
    } catch (...) {
      forensics_.recorder().finish(id, false);
      throw;
    }
    enqueued = true;
  });
  CommStats delta;
  delta.calls = 1;
  delta.blocked_seconds = seconds_since(t0);
  if (enqueued) {
    delta.bytes_sent = moved.sent;
    delta.bytes_received = moved.received;
    delta.payload_bytes = moved.payload;
  }
  add_stats(delta);
  return status;
}

// Arguments are checked before anything is enqueued; a failure there is counted as a call with no bytes.
sdk::Status NcclCommunicator::allreduce_async(torch::Tensor& tensor, sdk::ReduceOp op,
                                              std::unique_ptr<sdk::Request>* request) noexcept {
  std::optional<DeviceBuffer> b;
  ncclRedOp_t nop{};
  const sdk::Status checked = checked_async("allreduce_async", request, [&] {
    b = device_buffer(tensor, device_, "allreduce_async", "the");
    nop = nccl_op(op);
  });
  if (!checked.ok) return checked;
  return enqueue_async(call_shape(CommOp::AllreduceAsync, tensor, static_cast<int>(op)), "ncclAllReduce", *b, {},
                       allreduce_traffic(b->bytes, size_), request, [&](cudaStream_t stream) {
                         return ncclAllReduce(b->data(), b->data(), b->count, b->type, nop, comm_, stream);
                       });
}

sdk::Status NcclCommunicator::reduce_scatter_async(const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op,
                                                   std::unique_ptr<sdk::Request>* request) noexcept {
  std::optional<DeviceBuffer> in, out;
  ncclRedOp_t nop{};
  const sdk::Status checked = checked_async("reduce_scatter_async", request, [&] {
    in = device_buffer(input, device_, "reduce_scatter_async", "input");
    out = device_buffer(output, device_, "reduce_scatter_async", "output");
    nccl::prepare_reduce_scatter(*in, *out, rank_, size_, "reduce_scatter_async");
    nop = nccl_op(op);
  });
  if (!checked.ok) return checked;
  return enqueue_async(call_shape(CommOp::ReduceScatterAsync, input, static_cast<int>(op)), "ncclReduceScatter", *out,
                       in->device, scatter_gather_traffic(in->bytes, size_), request, [&](cudaStream_t stream) {
                         return ncclReduceScatter(in->data(), out->data(), out->count, out->type, nop, comm_, stream);
                       });
}

sdk::Status NcclCommunicator::allgather_async(const torch::Tensor& input, torch::Tensor& output,
                                              std::unique_ptr<sdk::Request>* request) noexcept {
  std::optional<DeviceBuffer> in, out;
  const sdk::Status checked = checked_async("allgather_async", request, [&] {
    in = device_buffer(input, device_, "allgather_async", "input");
    out = device_buffer(output, device_, "allgather_async", "output");
    nccl::prepare_allgather(*in, *out, rank_, size_, "allgather_async");
  });
  if (!checked.ok) return checked;
  return enqueue_async(call_shape(CommOp::AllgatherAsync, input), "ncclAllGather", *out, in->device,
                       scatter_gather_traffic(out->bytes, size_), request, [&](cudaStream_t stream) {
                         return ncclAllGather(in->data(), out->data(), in->count, in->type, comm_, stream);
                       });
}

}  // namespace gradsweep::comm
