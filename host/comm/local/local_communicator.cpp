// The one-rank backend: what `single` runs on, and what every strategy degenerates to at one rank.
// Collectives are identities (or copies). The stack's counting layer counts them as it counts every
// backend's calls (docs/communicators.md): at one rank nothing is sent or received, but every call counts
// once, with its size S and its (tiny) time.
#include "comm/core/host_communicator.hpp"
#include "comm/core/host_group.hpp"
#include "comm/core/backend_features.hpp"

#include <gradsweep/sdk/status.hpp>

namespace gradsweep::comm {
namespace {

class DoneRequest final : public sdk::Request {
 public:
  sdk::Status wait() noexcept override { return sdk::Status::Ok(); }
};

class LocalCommunicator final : public HostCommunicator {
 public:
  LocalCommunicator() = default;
  // A group of one (split, group): counted also in `parent`'s counters under `name`.
  LocalCommunicator(HostCommunicator& parent, const std::string& name) { link_to_parent(parent, name); }

  int rank() const noexcept override { return 0; }
  int size() const noexcept override { return 1; }
  int local_rank() const noexcept override { return 0; }
  int local_size() const noexcept override { return 1; }
  const char* backend() const noexcept override { return "local"; }

  sdk::Status allreduce(torch::Tensor&, sdk::ReduceOp) noexcept override {
    return done([] {});
  }
  sdk::Status broadcast(torch::Tensor&, int root) noexcept override {
    if (root != 0) return sdk::Status::Error("broadcast: root " + std::to_string(root) + " out of range (1 rank)");
    return done([] {});
  }
  sdk::Status allgather(const torch::Tensor& input, torch::Tensor& output) noexcept override {
    return done([&] { output.copy_(input.view_as(output)); });
  }
  sdk::Status reduce_scatter(const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp) noexcept override {
    return done([&] { output.copy_(input.view_as(output)); });
  }
  sdk::Status send(const torch::Tensor&, int dst, int) noexcept override {
    if (sdk::Status s = parent_status("send"); !s.ok) return s;
    return sdk::Status::Error("send to rank " + std::to_string(dst) + ": a one-rank job has no peers");
  }
  sdk::Status recv(torch::Tensor&, int src, int) noexcept override {
    if (sdk::Status s = parent_status("recv"); !s.ok) return s;
    return sdk::Status::Error("recv from rank " + std::to_string(src) + ": a one-rank job has no peers");
  }
  sdk::Status barrier() noexcept override {
    return done([] {});
  }
  sdk::Status allreduce_async(torch::Tensor&, sdk::ReduceOp, std::unique_ptr<sdk::Request>* request) noexcept override {
    if (sdk::Status s = parent_status("allreduce_async"); !s.ok) return s;
    if (request == nullptr) return sdk::Status::Error("allreduce_async: request is null");
    return done([&] { *request = std::make_unique<DoneRequest>(); });
  }
  sdk::Status reduce_scatter_async(const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op,
                                   std::unique_ptr<sdk::Request>* request) noexcept override {
    if (request == nullptr) return sdk::Status::Error("reduce_scatter_async: request is null");
    const sdk::Status status = reduce_scatter(input, output, op);
    if (status.ok) *request = std::make_unique<DoneRequest>();
    return status;
  }
  sdk::Status allgather_async(const torch::Tensor& input, torch::Tensor& output,
                              std::unique_ptr<sdk::Request>* request) noexcept override {
    if (request == nullptr) return sdk::Status::Error("allgather_async: request is null");
    const sdk::Status status = allgather(input, output);
    if (status.ok) *request = std::make_unique<DoneRequest>();
    return status;
  }
  // On one rank every algorithm is the identity.
  sdk::Status with_algorithm(sdk::Algorithm, sdk::Communicator** view) noexcept override {
    if (sdk::Status s = parent_status("with_algorithm"); !s.ok) return s;
    *view = this;
    return sdk::Status::Ok();
  }
  sdk::Status recv_any(torch::Tensor&, int, int*) noexcept override {
    if (sdk::Status s = parent_status("recv_any"); !s.ok) return s;
    return sdk::Status::Error("recv_any: a one-rank job has no peers");
  }
  sdk::CommFeatures features() const noexcept override { return local_features(); }
  // On one rank every group is this rank alone.
  sdk::Status split(int color, int, std::unique_ptr<sdk::Group>* group) noexcept override {
    if (color < 0) return sdk::Status::Error(negative_color_error(color, 0));
    return make_group(split_name(color), group);
  }
  sdk::Status group(sdk::GroupKind kind, std::unique_ptr<sdk::Group>* group) noexcept override {
    return sdk::guard([&] { sdk::check(make_group(group_kind_name(kind), group)); });
  }

 private:
  sdk::Status make_group(const std::string& name, std::unique_ptr<sdk::Group>* group) noexcept {
    if (sdk::Status s = parent_status(name.c_str()); !s.ok) return s;
    if (group == nullptr) return sdk::Status::Error(name + ": group is null");
    return sdk::guard([&] { *group = std::make_unique<HostGroup>(std::make_unique<LocalCommunicator>(*this, name)); });
  }
  // One call, unless this is a group whose parent is gone.
  template <class Body>
  sdk::Status done(Body&& body) noexcept {
    if (sdk::Status s = parent_status(); !s.ok) return s;
    return sdk::guard(body);
  }
};

}  // namespace

std::unique_ptr<HostCommunicator> make_local_communicator() { return std::make_unique<LocalCommunicator>(); }

}  // namespace gradsweep::comm
