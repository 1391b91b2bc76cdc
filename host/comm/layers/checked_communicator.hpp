#pragma once
// The argument-check layer of the communicator stack (comm/layers/communicator_stack.hpp): the rules every
// backend shares, in one copy, checked before anything is recorded, watched or sent, so that a bad call
// fails at once on the calling rank with a Status naming the call, never as a hang or a mismatch.
//
// Checked here: tensors defined and contiguous; input and output of one dtype, allgather's output and
// reduce_scatter's input size() times the other; a known ReduceOp; broadcast's root, send's destination
// and recv's source within the ranks (and not this rank for point-to-point); tags >= 0; request, source,
// view and group pointers not null; and the feature each call needs
// (sdk::CommFeatures: kPointToPoint, kRecvAny, kAsyncCollectives, kRingAlgorithm, ...). What only a
// backend knows stays in the backend: the device it moves, the dtypes it has, its largest tag and count.
#include "comm/layers/communicator_layer.hpp"

#include <memory>

namespace gradsweep::comm {

class CheckedCommunicator final : public CommunicatorLayer {
 public:
  explicit CheckedCommunicator(std::unique_ptr<HostCommunicator> next) : CommunicatorLayer(std::move(next)) {}
  CheckedCommunicator(sdk::Communicator& view, sdk::Algorithm algorithm, CommunicatorLayer& owner)
      : CommunicatorLayer(view, algorithm, owner) {}

  sdk::Status allreduce(torch::Tensor& tensor, sdk::ReduceOp op) noexcept override;
  sdk::Status broadcast(torch::Tensor& tensor, int root) noexcept override;
  sdk::Status allgather(const torch::Tensor& input, torch::Tensor& output) noexcept override;
  sdk::Status reduce_scatter(const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op) noexcept override;
  sdk::Status send(const torch::Tensor& tensor, int dst, int tag) noexcept override;
  sdk::Status recv(torch::Tensor& tensor, int src, int tag) noexcept override;
  sdk::Status recv_any(torch::Tensor& tensor, int tag, int* source) noexcept override;
  sdk::Status allreduce_async(torch::Tensor& tensor, sdk::ReduceOp op,
                              std::unique_ptr<sdk::Request>* request) noexcept override;
  sdk::Status reduce_scatter_async(const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op,
                                   std::unique_ptr<sdk::Request>* request) noexcept override;
  sdk::Status allgather_async(const torch::Tensor& input, torch::Tensor& output,
                              std::unique_ptr<sdk::Request>* request) noexcept override;
  sdk::Status with_algorithm(sdk::Algorithm algorithm, sdk::Communicator** view) noexcept override;
  sdk::Status split(int color, int key, std::unique_ptr<sdk::Group>* group) noexcept override;
  sdk::Status group(sdk::GroupKind kind, std::unique_ptr<sdk::Group>* group) noexcept override;

 protected:
  std::unique_ptr<CommunicatorLayer> over_view(sdk::Communicator& view, sdk::Algorithm algorithm) override {
    return std::make_unique<CheckedCommunicator>(view, algorithm, *this);
  }
  std::unique_ptr<CommunicatorLayer> over_group(std::unique_ptr<HostCommunicator> group) override {
    return std::make_unique<CheckedCommunicator>(std::move(group));
  }

 private:
  // The call's name as errors give it: "allreduce", "ring allreduce_async".
  std::string named(const char* call, bool async = false) const;
  void tensor(const torch::Tensor& t, const std::string& call, const char* role) const;
  void reduction(sdk::ReduceOp op, const std::string& call) const;
  void scatter_gather(const torch::Tensor& input, const torch::Tensor& output, bool gather,
                      const std::string& call) const;
  void peer(int rank, const std::string& call, const char* role, bool point_to_point) const;
  void tag(int tag, const std::string& call) const;
  void require(sdk::CommFeatures feature, const std::string& call) const;
};

}  // namespace gradsweep::comm
