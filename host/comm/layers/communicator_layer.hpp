#pragma once
// One layer of the communicator stack (comm/layers/communicator_stack.hpp): an sdk::Communicator that holds the
// next one (a backend or another layer) and forwards every call to it, so that a feature such as
// argument checks or the hang watchdog is written once and wraps any backend, as c10d's wrappers wrap
// any ProcessGroup. A layer overrides the calls it adds to; the rest pass through.
//
// What a layer must keep whole:
//   - the counters: a layer shares the ledger of what it wraps (HostCommunicator::share_ledger_with), so
//     take_stats() on the top of the stack is the backend's, groups and all;
//   - with_algorithm's views: the view the backend returns is wrapped in the same layer (made once per
//     algorithm, owned by this layer), so ring and hierarchical calls pass the layer too;
//   - split and group: the group the backend returns (a HostGroup) is re-made around the same layer, so
//     a group's calls are checked and watched as the job's are and its bytes still count under its name.
#include "comm/core/host_communicator.hpp"

#include <gradsweep/sdk/services.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace gradsweep::comm {

class CommunicatorLayer : public HostCommunicator {
 public:
  // The layer over `next`, which it owns.
  explicit CommunicatorLayer(std::unique_ptr<HostCommunicator> next);
  ~CommunicatorLayer() override;
  CommunicatorLayer(const CommunicatorLayer&) = delete;
  CommunicatorLayer& operator=(const CommunicatorLayer&) = delete;

  int rank() const noexcept override { return next_.rank(); }
  int size() const noexcept override { return next_.size(); }
  int local_rank() const noexcept override { return next_.local_rank(); }
  int local_size() const noexcept override { return next_.local_size(); }
  const char* backend() const noexcept override { return next_.backend(); }
  sdk::CommFeatures features() const noexcept override { return next_.features(); }
  const FlightRecorder* flight_recorder() override { return host_.flight_recorder(); }
  CollectiveForensics* forensics() override { return host_.forensics(); }
  HostCommunicator& transport() override { return host_.transport(); }

  sdk::Status allreduce(torch::Tensor& tensor, sdk::ReduceOp op) noexcept override {
    return next_.allreduce(tensor, op);
  }
  sdk::Status broadcast(torch::Tensor& tensor, int root) noexcept override { return next_.broadcast(tensor, root); }
  sdk::Status allgather(const torch::Tensor& input, torch::Tensor& output) noexcept override {
    return next_.allgather(input, output);
  }
  sdk::Status reduce_scatter(const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op) noexcept override {
    return next_.reduce_scatter(input, output, op);
  }
  sdk::Status send(const torch::Tensor& tensor, int dst, int tag) noexcept override {
    return next_.send(tensor, dst, tag);
  }
  sdk::Status recv(torch::Tensor& tensor, int src, int tag) noexcept override { return next_.recv(tensor, src, tag); }
  sdk::Status recv_any(torch::Tensor& tensor, int tag, int* source) noexcept override {
    return next_.recv_any(tensor, tag, source);
  }
  sdk::Status barrier() noexcept override { return next_.barrier(); }
  sdk::Status allreduce_async(torch::Tensor& tensor, sdk::ReduceOp op,
                              std::unique_ptr<sdk::Request>* request) noexcept override {
    return next_.allreduce_async(tensor, op, request);
  }
  sdk::Status reduce_scatter_async(const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op,
                                   std::unique_ptr<sdk::Request>* request) noexcept override {
    return next_.reduce_scatter_async(input, output, op, request);
  }
  sdk::Status allgather_async(const torch::Tensor& input, torch::Tensor& output,
                              std::unique_ptr<sdk::Request>* request) noexcept override {
    return next_.allgather_async(input, output, request);
  }
  // The next one's view, wrapped in this layer (Native: this layer itself).
  sdk::Status with_algorithm(sdk::Algorithm algorithm, sdk::Communicator** view) noexcept override;
  // The next one's group, re-made around this layer.
  sdk::Status split(int color, int key, std::unique_ptr<sdk::Group>* group) noexcept override;
  sdk::Status group(sdk::GroupKind kind, std::unique_ptr<sdk::Group>* group) noexcept override;

 protected:
  // A layer over `view`, an algorithm view of `owner`'s next communicator: not owned, same ledger.
  CommunicatorLayer(sdk::Communicator& view, sdk::Algorithm algorithm, CommunicatorLayer& owner);
  sdk::Communicator& next() { return next_; }
  // Native for the layer over a communicator; Ring or Hierarchical for one over a view.
  sdk::Algorithm algorithm() const { return algorithm_; }
  // The same kind of layer: over a view of the next communicator, and around a group's communicator.
  virtual std::unique_ptr<CommunicatorLayer> over_view(sdk::Communicator& view, sdk::Algorithm algorithm) = 0;
  virtual std::unique_ptr<CommunicatorLayer> over_group(std::unique_ptr<HostCommunicator> group) = 0;

 private:
  sdk::Status wrap_group(sdk::Status made, std::unique_ptr<sdk::Group>* group);

  std::unique_ptr<HostCommunicator> owned_;  // null in a view's layer
  sdk::Communicator& next_;
  HostCommunicator& host_;              // the owned communicator, or the owner's (counters, recorder)
  CommunicatorLayer* owner_ = nullptr;  // a view's layer: the layer whose views these are
  const sdk::Algorithm algorithm_ = sdk::Algorithm::Native;
  std::mutex views_mutex_;
  std::map<sdk::Algorithm, std::unique_ptr<CommunicatorLayer>> views_;  // guarded by views_mutex_
};

// "ring " or "hierarchical " before a call's name on a view (as the backends name their views' calls).
std::string algorithm_prefix(sdk::Algorithm algorithm);

}  // namespace gradsweep::comm
