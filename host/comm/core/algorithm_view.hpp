#pragma once
// What Communicator::with_algorithm returns: the same ranks and counters as the backend, with the calls
// an Algorithm changes (allreduce, reduce_scatter, allgather and their _async forms) carried out by one fixed
// algorithm, and every other call passed to the backend unchanged. A backend offers its algorithms
// through AlgorithmCalls and owns one view per algorithm, made once.
#include <gradsweep/sdk/services.hpp>

#include <memory>

namespace gradsweep::comm {

class AlgorithmCalls {
 public:
  virtual sdk::Status allreduce_by(sdk::Algorithm algorithm, torch::Tensor& tensor, sdk::ReduceOp op) noexcept = 0;
  virtual sdk::Status allreduce_async_by(sdk::Algorithm algorithm, torch::Tensor& tensor, sdk::ReduceOp op,
                                         std::unique_ptr<sdk::Request>* request) noexcept = 0;
  virtual sdk::Status allgather_by(sdk::Algorithm algorithm, const torch::Tensor& input,
                                   torch::Tensor& output) noexcept = 0;
  virtual sdk::Status reduce_scatter_by(sdk::Algorithm algorithm, const torch::Tensor& input, torch::Tensor& output,
                                        sdk::ReduceOp op) noexcept = 0;
  virtual sdk::Status reduce_scatter_async_by(sdk::Algorithm algorithm, const torch::Tensor& input,
                                              torch::Tensor& output, sdk::ReduceOp op,
                                              std::unique_ptr<sdk::Request>* request) noexcept = 0;
  virtual sdk::Status allgather_async_by(sdk::Algorithm algorithm, const torch::Tensor& input, torch::Tensor& output,
                                         std::unique_ptr<sdk::Request>* request) noexcept = 0;

 protected:
  ~AlgorithmCalls() = default;
};

class AlgorithmView final : public sdk::Communicator {
 public:
  AlgorithmView(sdk::Communicator& base, AlgorithmCalls& calls, sdk::Algorithm algorithm)
      : base_(base), calls_(calls), algorithm_(algorithm) {}

  int rank() const noexcept override { return base_.rank(); }
  int size() const noexcept override { return base_.size(); }
  int local_rank() const noexcept override { return base_.local_rank(); }
  int local_size() const noexcept override { return base_.local_size(); }
  const char* backend() const noexcept override { return base_.backend(); }

  sdk::Status allreduce(torch::Tensor& tensor, sdk::ReduceOp op) noexcept override {
    return calls_.allreduce_by(algorithm_, tensor, op);
  }
  sdk::Status allreduce_async(torch::Tensor& tensor, sdk::ReduceOp op,
                              std::unique_ptr<sdk::Request>* request) noexcept override {
    return calls_.allreduce_async_by(algorithm_, tensor, op, request);
  }
  sdk::Status allgather(const torch::Tensor& input, torch::Tensor& output) noexcept override {
    return calls_.allgather_by(algorithm_, input, output);
  }
  sdk::Status reduce_scatter(const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op) noexcept override {
    return calls_.reduce_scatter_by(algorithm_, input, output, op);
  }
  sdk::Status reduce_scatter_async(const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op,
                                   std::unique_ptr<sdk::Request>* request) noexcept override {
    return calls_.reduce_scatter_async_by(algorithm_, input, output, op, request);
  }
  sdk::Status allgather_async(const torch::Tensor& input, torch::Tensor& output,
                              std::unique_ptr<sdk::Request>* request) noexcept override {
    return calls_.allgather_async_by(algorithm_, input, output, request);
  }

  sdk::Status broadcast(torch::Tensor& tensor, int root) noexcept override { return base_.broadcast(tensor, root); }
  sdk::Status send(const torch::Tensor& tensor, int dst, int tag) noexcept override {
    return base_.send(tensor, dst, tag);
  }
  sdk::Status recv(torch::Tensor& tensor, int src, int tag) noexcept override { return base_.recv(tensor, src, tag); }
  sdk::Status recv_any(torch::Tensor& tensor, int tag, int* source) noexcept override {
    return base_.recv_any(tensor, tag, source);
  }
  sdk::Status barrier() noexcept override { return base_.barrier(); }
  sdk::CommFeatures features() const noexcept override { return base_.features(); }
  // Groups are split from the backend: a group of a view uses the backend's algorithms.
  sdk::Status split(int color, int key, std::unique_ptr<sdk::Group>* group) noexcept override {
    return base_.split(color, key, group);
  }
  sdk::Status group(sdk::GroupKind kind, std::unique_ptr<sdk::Group>* group) noexcept override {
    return base_.group(kind, group);
  }
  // A view of a view is a view of the backend.
  sdk::Status with_algorithm(sdk::Algorithm algorithm, sdk::Communicator** view) noexcept override {
    return base_.with_algorithm(algorithm, view);
  }

 private:
  sdk::Communicator& base_;
  AlgorithmCalls& calls_;
  const sdk::Algorithm algorithm_;
};

}  // namespace gradsweep::comm
