#include "comm/layers/checked_communicator.hpp"

#include "comm/core/dtype_name.hpp"
#include "comm/core/host_group.hpp"

#include <stdexcept>

namespace gradsweep::comm {

std::string CheckedCommunicator::named(const char* call, bool async) const {
  return algorithm_prefix(algorithm()) + call + (async ? "_async" : "");
}

// The message is made only for a refused tensor: this runs on every call.
void CheckedCommunicator::tensor(const torch::Tensor& t, const std::string& call, const char* role) const {
  if (!t.defined()) throw std::invalid_argument(call + ": " + role + " tensor is undefined");
  if (!t.is_contiguous())
    throw std::invalid_argument(call + ": " + role + " tensor is not contiguous (sizes " + c10::str(t.sizes()) +
                                ", strides " + c10::str(t.strides()) + "); pass .contiguous() or a flat buffer");
}

void CheckedCommunicator::reduction(sdk::ReduceOp op, const std::string& call) const {
  if (static_cast<std::uint32_t>(op) > static_cast<std::uint32_t>(sdk::ReduceOp::Min))
    throw std::invalid_argument(call + ": unknown ReduceOp " + std::to_string(static_cast<std::uint32_t>(op)));
}

// allgather: output = size() x input; reduce_scatter: input = size() x output.
void CheckedCommunicator::scatter_gather(const torch::Tensor& input, const torch::Tensor& output, bool gather,
                                         const std::string& call) const {
  tensor(input, call, "input");
  tensor(output, call, "output");
  if (input.scalar_type() != output.scalar_type())
    throw std::invalid_argument(call + ": input is " + dtype_name(input.scalar_type()) + " but output is " +
                                dtype_name(output.scalar_type()));
  const torch::Tensor& whole = gather ? output : input;
  const torch::Tensor& part = gather ? input : output;
  if (whole.numel() != part.numel() * size())
    throw std::invalid_argument(call + ": " + (gather ? "output" : "input") + " has " + std::to_string(whole.numel()) +
                                " elements; expected size() x " + (gather ? "input" : "output") + " = " +
                                std::to_string(size()) + " x " + std::to_string(part.numel()));
}

void CheckedCommunicator::peer(int rank, const std::string& call, const char* role, bool point_to_point) const {
  if (point_to_point && size() == 1) throw std::invalid_argument(call + ": a one-rank job has no peers");
  if (rank < 0 || rank >= size())
    throw std::invalid_argument(call + ": " + role + " rank " + std::to_string(rank) + " out of range (" +
                                std::to_string(size()) + " ranks)");
  if (point_to_point && rank == this->rank())
    throw std::invalid_argument(call + ": rank " + std::to_string(rank) + " is this rank itself");
}

// The upper bound is the backend's (MPI_TAG_UB); below zero is wrong everywhere.
void CheckedCommunicator::tag(int tag, const std::string& call) const {
  if (tag < 0) throw std::invalid_argument(call + ": tag " + std::to_string(tag) + " out of range (tags are >= 0)");
}

void CheckedCommunicator::require(sdk::CommFeatures feature, const std::string& call) const {
  const sdk::CommFeatures offered = features();
  if ((offered & feature) == 0)
    throw std::invalid_argument(call + ": this communicator does not offer " + sdk::feature_names(feature) +
                                " (features: " + sdk::feature_names(offered) + ")");
}

sdk::Status CheckedCommunicator::allreduce(torch::Tensor& t, sdk::ReduceOp op) noexcept {
  if (sdk::Status s = sdk::guard([&] {
        tensor(t, named("allreduce"), "the");
        reduction(op, named("allreduce"));
      });
      !s.ok)
    return s;
  return next().allreduce(t, op);
}

sdk::Status CheckedCommunicator::broadcast(torch::Tensor& t, int root) noexcept {
  if (sdk::Status s = sdk::guard([&] {
        tensor(t, "broadcast", "the");
        peer(root, "broadcast", "root", false);
      });
      !s.ok)
    return s;
  return next().broadcast(t, root);
}

sdk::Status CheckedCommunicator::allgather(const torch::Tensor& input, torch::Tensor& output) noexcept {
  if (sdk::Status s = sdk::guard([&] { scatter_gather(input, output, true, named("allgather")); }); !s.ok) return s;
  return next().allgather(input, output);
}

sdk::Status CheckedCommunicator::reduce_scatter(const torch::Tensor& input, torch::Tensor& output,
                                                sdk::ReduceOp op) noexcept {
  if (sdk::Status s = sdk::guard([&] {
        scatter_gather(input, output, false, named("reduce_scatter"));
        reduction(op, named("reduce_scatter"));
      });
      !s.ok)
    return s;
  return next().reduce_scatter(input, output, op);
}

sdk::Status CheckedCommunicator::send(const torch::Tensor& t, int dst, int tag_) noexcept {
  if (sdk::Status s = sdk::guard([&] {
        tensor(t, "send", "the");
        require(sdk::kPointToPoint, "send");
        peer(dst, "send", "destination", true);
        tag(tag_, "send");
      });
      !s.ok)
    return s;
  return next().send(t, dst, tag_);
}

sdk::Status CheckedCommunicator::recv(torch::Tensor& t, int src, int tag_) noexcept {
  if (sdk::Status s = sdk::guard([&] {
        tensor(t, "recv", "the");
        require(sdk::kPointToPoint, "recv");
        peer(src, "recv", "source", true);
        tag(tag_, "recv");
      });
      !s.ok)
    return s;
  return next().recv(t, src, tag_);
}

sdk::Status CheckedCommunicator::recv_any(torch::Tensor& t, int tag_, int* source) noexcept {
  if (sdk::Status s = sdk::guard([&] {
        if (source == nullptr) throw std::invalid_argument("recv_any: source is null");
        tensor(t, "recv_any", "the");
        require(sdk::kRecvAny, "recv_any");
        tag(tag_, "recv_any");
        if (size() == 1) throw std::invalid_argument("recv_any: a one-rank job has no peers");
      });
      !s.ok)
    return s;
  return next().recv_any(t, tag_, source);
}

sdk::Status CheckedCommunicator::allreduce_async(torch::Tensor& t, sdk::ReduceOp op,
                                                 std::unique_ptr<sdk::Request>* request) noexcept {
  const std::string call = named("allreduce", true);
  if (sdk::Status s = sdk::guard([&] {
        if (request == nullptr) throw std::invalid_argument(call + ": request is null");
        require(sdk::kAsyncCollectives, call);
        tensor(t, call, "the");
        reduction(op, call);
      });
      !s.ok)
    return s;
  return next().allreduce_async(t, op, request);
}

sdk::Status CheckedCommunicator::reduce_scatter_async(const torch::Tensor& input, torch::Tensor& output,
                                                      sdk::ReduceOp op,
                                                      std::unique_ptr<sdk::Request>* request) noexcept {
  const std::string call = named("reduce_scatter", true);
  if (sdk::Status s = sdk::guard([&] {
        if (request == nullptr) throw std::invalid_argument(call + ": request is null");
        require(sdk::kAsyncCollectives, call);
        scatter_gather(input, output, false, call);
        reduction(op, call);
      });
      !s.ok)
    return s;
  return next().reduce_scatter_async(input, output, op, request);
}

sdk::Status CheckedCommunicator::allgather_async(const torch::Tensor& input, torch::Tensor& output,
                                                 std::unique_ptr<sdk::Request>* request) noexcept {
  const std::string call = named("allgather", true);
  if (sdk::Status s = sdk::guard([&] {
        if (request == nullptr) throw std::invalid_argument(call + ": request is null");
        require(sdk::kAsyncCollectives, call);
        scatter_gather(input, output, true, call);
      });
      !s.ok)
    return s;
  return next().allgather_async(input, output, request);
}

sdk::Status CheckedCommunicator::with_algorithm(sdk::Algorithm algorithm, sdk::Communicator** view) noexcept {
  if (sdk::Status s = sdk::guard([&] {
        if (view == nullptr) throw std::invalid_argument("with_algorithm: view is null");
        switch (algorithm) {
          case sdk::Algorithm::Native: return;
          case sdk::Algorithm::Ring: require(sdk::kRingAlgorithm, "with_algorithm(ring)"); return;
          case sdk::Algorithm::Hierarchical:
            require(sdk::kHierarchicalAlgorithm, "with_algorithm(hierarchical)");
            return;
        }
        throw std::invalid_argument("with_algorithm: unknown algorithm " +
                                    std::to_string(static_cast<std::uint32_t>(algorithm)));
      });
      !s.ok)
    return s;
  return CommunicatorLayer::with_algorithm(algorithm, view);
}

sdk::Status CheckedCommunicator::split(int color, int key, std::unique_ptr<sdk::Group>* group) noexcept {
  if (sdk::Status s = sdk::guard([&] {
        if (group == nullptr) throw std::invalid_argument("split: group is null");
        require(sdk::kGroups, "split");
        // A negative color is the backend's to refuse: it learns every rank's color first, so that every
        // rank fails alike instead of the others waiting for the one that refused alone.
      });
      !s.ok)
    return s;
  return CommunicatorLayer::split(color, key, group);
}

sdk::Status CheckedCommunicator::group(sdk::GroupKind kind, std::unique_ptr<sdk::Group>* group) noexcept {
  if (sdk::Status s = sdk::guard([&] {
        if (group == nullptr) throw std::invalid_argument("group: group is null");
        require(sdk::kGroups, "group(" + group_kind_name(kind) + ")");
      });
      !s.ok)
    return s;
  return CommunicatorLayer::group(kind, group);
}

}  // namespace gradsweep::comm
