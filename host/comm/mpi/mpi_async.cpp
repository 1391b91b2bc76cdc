// The MPI backend's asynchronous collectives (allreduce, reduce_scatter, allgather). Each runs on the
// communicator's worker thread (comm/core/async_worker.hpp), on a communicator of its own (async_comm_), in
// the order the caller issued them; a blocking MPI call there progresses by itself while the caller computes, which
// MPI_Iallreduce in Open MPI does not (it moves only while the caller is inside MPI).
//
// The layers above learn when the worker runs each one (comm/core/async_progress.hpp): the flight recorder marks it
// running and done, the counting layer counts its busy time.
#include "comm/core/async_progress.hpp"
#include "comm/mpi/mpi_buffer.hpp"
#include "comm/mpi/mpi_communicator.hpp"
#include "comm/mpi/mpi_reduce_ops.hpp"
#include "comm/mpi/mpi_ring_transport.hpp"

#include <algorithm>
#include <stdexcept>

namespace gradsweep::comm {

// One asynchronous operation as the caller sees it. The job holds the tensor until it has run; the
// communicator's destructor runs every job first, so a request may outlive it.
class MpiRequest final : public sdk::Request {
 public:
  explicit MpiRequest(std::shared_ptr<AsyncWorker::Job> job) : job_(std::move(job)) {}
  ~MpiRequest() override { wait(); }  // destroying an un-waited request completes it

  sdk::Status wait() noexcept override {
    if (!job_) return result_;
    result_ = job_->wait();
    job_.reset();
    return result_;
  }

 private:
  std::shared_ptr<AsyncWorker::Job> job_;
  sdk::Status result_;
};

void MpiCommunicator::enqueue_async(std::function<void()> body, std::unique_ptr<sdk::Request>* request) {
  // The layers' listeners for this call (the recorder's entry, the counting layer's clock) hear as it runs.
  auto run = [body = std::move(body), progress = AsyncProgress::claim()] {
    progress.started();
    const sdk::Status status = sdk::guard(body);
    progress.finished(status.ok);
    return status;
  };
  auto job = worker_.submit(std::move(run));
  *request = std::make_unique<MpiRequest>(std::move(job));
}

namespace {

std::string async_name(sdk::Algorithm algorithm, const char* op) {
  switch (algorithm) {
    case sdk::Algorithm::Native: return std::string(op) + "_async";
    case sdk::Algorithm::Ring: return "ring " + std::string(op) + "_async";
    case sdk::Algorithm::Hierarchical: return "hierarchical " + std::string(op) + "_async";
  }
  throw std::invalid_argument(std::string(op) + "_async: unknown algorithm " +
                              std::to_string(static_cast<std::uint32_t>(algorithm)));
}

}  // namespace

sdk::Status MpiCommunicator::allreduce_async_by(sdk::Algorithm algorithm, torch::Tensor& tensor, sdk::ReduceOp op,
                                                std::unique_ptr<sdk::Request>* request) noexcept {
  return guarded([&] {
    const std::string call = async_name(algorithm, "allreduce");
    if (request == nullptr) throw std::invalid_argument(call + ": request is null");
    const bool hierarchical = algorithm == sdk::Algorithm::Hierarchical;
    const bool ring = algorithm == sdk::Algorithm::Ring || hierarchical;
    const mpi::Buffer b = mpi::buffer_of(tensor, call, "the");
    const MPI_Op mop = mpi::reduce_op(tensor.scalar_type(), op);  // also rejects an unknown op, before queueing
    std::function<void()> body;
    if (hierarchical) {
      body = [this, held = tensor, op, call]() mutable {
        hierarchical_allreduce(*async_split_, async_comm_, held, op, call);
      };
    } else if (ring) {
      body = [this, held = tensor, op, call]() mutable { ring_allreduce(async_comm_, held, op, call); };
    } else {
      body = [this, held = tensor, b, mop, call] {
        mpi::check_mpi(MPI_Allreduce(MPI_IN_PLACE, b.data, b.count, b.type, mop, async_comm_), call, "MPI_Allreduce");
      };
    }
    enqueue_async(std::move(body), request);
  });
}

// Hierarchical runs reduce_scatter and allgather as the ring, as the blocking calls do.
sdk::Status MpiCommunicator::reduce_scatter_async_by(sdk::Algorithm algorithm, const torch::Tensor& input,
                                                     torch::Tensor& output, sdk::ReduceOp op,
                                                     std::unique_ptr<sdk::Request>* request) noexcept {
  return guarded([&] {
    const std::string call = async_name(algorithm, "reduce_scatter");
    if (request == nullptr) throw std::invalid_argument(call + ": request is null");
    const bool ring = algorithm != sdk::Algorithm::Native;
    mpi::buffer_of(input, call, "input");
    mpi::buffer_of(output, call, "output");
    mpi::check_reduce_scatter_shapes(input, output, size_, call);
    mpi::reduce_op(input.scalar_type(), op);  // rejects an unknown op before queueing
    std::function<void()> body;
    if (ring) {
      body = [this, in_held = input, out_held = output, op, call]() mutable {
        mpi::RingTransport transport(async_comm_, rank_, size_, call, peer_waits_.get());
        ring::reduce_scatter(transport, in_held, out_held, op, ring_tuning_);
      };
    } else {
      body = [this, in_held = input, out_held = output, op, call]() mutable {
        native_reduce_scatter(async_comm_, in_held, out_held, op, call);
      };
    }
    enqueue_async(std::move(body), request);
  });
}

sdk::Status MpiCommunicator::allgather_async_by(sdk::Algorithm algorithm, const torch::Tensor& input,
                                                torch::Tensor& output,
                                                std::unique_ptr<sdk::Request>* request) noexcept {
  return guarded([&] {
    const std::string call = async_name(algorithm, "allgather");
    if (request == nullptr) throw std::invalid_argument(call + ": request is null");
    const bool ring = algorithm != sdk::Algorithm::Native;
    mpi::buffer_of(input, call, "input");
    mpi::buffer_of(output, call, "output");
    mpi::check_allgather_shapes(input, output, size_, call);
    std::function<void()> body;
    if (ring) {
      body = [this, in_held = input, out_held = output, call]() mutable {
        mpi::RingTransport transport(async_comm_, rank_, size_, call, peer_waits_.get());
        ring::allgather(transport, in_held, out_held, ring_tuning_);
      };
    } else {
      body = [this, in_held = input, out_held = output, call]() mutable {
        native_allgather(async_comm_, in_held, out_held, call);
      };
    }
    enqueue_async(std::move(body), request);
  });
}

void MpiCommunicator::drain_async() {
  // Unwatched, the stack's layers being gone: a job is pending here only when its request outlives the
  // communicator (a strategy that keeps one past its end), and the job's launcher still ends a rank stuck in it.
  worker_.drain();
}

}  // namespace gradsweep::comm
