#pragma once
// A sub-communicator as a plugin holds it (sdk::Group): the backend's own communicator over the group's
// ranks, under the group's name. sdk::Group and HostCommunicator both derive from sdk::Communicator, so a
// backend's class cannot be both; this forwards every call to it instead. The backend links its counters
// to the parent's (HostCommunicator::link_to_parent) and refuses calls once the parent is gone (counted
// calls and algorithm views check for themselves; the calls here that reach no counter check here).
#include "comm/core/host_communicator.hpp"

#include <memory>
#include <string>
#include <utility>

namespace gradsweep::comm {

class HostGroup final : public sdk::Group {
 public:
  explicit HostGroup(std::unique_ptr<HostCommunicator> impl) : impl_(std::move(impl)) {}

  const char* name() const noexcept override { return impl_->group_name().c_str(); }
  // The backend's communicator, for its counters (take_stats) and tests.
  HostCommunicator& host() { return *impl_; }
  // Hands the communicator over (a layer re-makes the group around it: comm/layers/communicator_layer.hpp);
  // this group is unusable afterwards.
  std::unique_ptr<HostCommunicator> release() { return std::move(impl_); }

  int rank() const noexcept override { return impl_->rank(); }
  int size() const noexcept override { return impl_->size(); }
  int local_rank() const noexcept override { return impl_->local_rank(); }
  int local_size() const noexcept override { return impl_->local_size(); }
  const char* backend() const noexcept override { return impl_->backend(); }
  sdk::CommFeatures features() const noexcept override { return impl_->features(); }

  sdk::Status allreduce(torch::Tensor& tensor, sdk::ReduceOp op) noexcept override {
    return impl_->allreduce(tensor, op);
  }
  sdk::Status broadcast(torch::Tensor& tensor, int root) noexcept override { return impl_->broadcast(tensor, root); }
  sdk::Status allgather(const torch::Tensor& input, torch::Tensor& output) noexcept override {
    return impl_->allgather(input, output);
  }
  sdk::Status reduce_scatter(const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op) noexcept override {
    return impl_->reduce_scatter(input, output, op);
  }
  sdk::Status send(const torch::Tensor& tensor, int dst, int tag) noexcept override {
    return impl_->send(tensor, dst, tag);
  }
  sdk::Status recv(torch::Tensor& tensor, int src, int tag) noexcept override { return impl_->recv(tensor, src, tag); }
  sdk::Status recv_any(torch::Tensor& tensor, int tag, int* source) noexcept override {
    return impl_->recv_any(tensor, tag, source);
  }
  sdk::Status barrier() noexcept override { return impl_->barrier(); }
  sdk::Status allreduce_async(torch::Tensor& tensor, sdk::ReduceOp op,
                              std::unique_ptr<sdk::Request>* request) noexcept override {
    return impl_->allreduce_async(tensor, op, request);
  }
  sdk::Status reduce_scatter_async(const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op,
                                   std::unique_ptr<sdk::Request>* request) noexcept override {
    return impl_->reduce_scatter_async(input, output, op, request);
  }
  sdk::Status allgather_async(const torch::Tensor& input, torch::Tensor& output,
                              std::unique_ptr<sdk::Request>* request) noexcept override {
    return impl_->allgather_async(input, output, request);
  }
  sdk::Status with_algorithm(sdk::Algorithm algorithm, sdk::Communicator** view) noexcept override {
    if (sdk::Status s = impl_->parent_status("with_algorithm"); !s.ok) return s;
    return impl_->with_algorithm(algorithm, view);
  }
  sdk::Status split(int color, int key, std::unique_ptr<sdk::Group>* group) noexcept override {
    if (sdk::Status s = impl_->parent_status("split"); !s.ok) return s;
    return impl_->split(color, key, group);
  }
  sdk::Status group(sdk::GroupKind kind, std::unique_ptr<sdk::Group>* group) noexcept override {
    if (sdk::Status s = impl_->parent_status("group"); !s.ok) return s;
    return impl_->group(kind, group);
  }

 private:
  std::unique_ptr<HostCommunicator> impl_;
};

// "node", "across_nodes": the names of GroupKind's groups; "split(3)": a split's.
std::string group_kind_name(sdk::GroupKind kind);
std::string split_name(int color);
// The error of split() with a negative color (checked before any rank communicates), naming the call.
std::string negative_color_error(int color, int rank);

}  // namespace gradsweep::comm
