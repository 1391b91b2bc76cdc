// The one-rank backend: what `single` runs on, and what every strategy degenerates to at one rank.
#include "comm/host_communicator.hpp"

#include <gradsweep/sdk/status.hpp>

namespace gradsweep::host {
namespace {

class DoneRequest final : public sdk::Request {
 public:
  sdk::Status wait() noexcept override { return sdk::Status::Ok(); }
};

class LocalCommunicator final : public HostCommunicator {
 public:
  int rank() const noexcept override { return 0; }
  int size() const noexcept override { return 1; }
  int local_rank() const noexcept override { return 0; }
  int local_size() const noexcept override { return 1; }
  const char* backend() const noexcept override { return "local"; }

  sdk::Status allreduce(torch::Tensor&, sdk::ReduceOp) noexcept override { return counted(); }
  sdk::Status broadcast(torch::Tensor&, int root) noexcept override {
    return root == 0 ? counted() : sdk::Status::Error("broadcast: root " + std::to_string(root) + " out of range (1 rank)");
  }
  sdk::Status allgather(const torch::Tensor& input, torch::Tensor& output) noexcept override {
    return sdk::guard([&] { output.copy_(input.view_as(output)); });
  }
  sdk::Status reduce_scatter(const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp) noexcept override {
    return sdk::guard([&] { output.copy_(input.view_as(output)); });
  }
  sdk::Status send(const torch::Tensor&, int dst, int) noexcept override {
    return sdk::Status::Error("send to rank " + std::to_string(dst) + ": a one-rank job has no peers");
  }
  sdk::Status recv(torch::Tensor&, int src, int) noexcept override {
    return sdk::Status::Error("recv from rank " + std::to_string(src) + ": a one-rank job has no peers");
  }
  sdk::Status barrier() noexcept override { return counted(); }
  sdk::Status allreduce_async(torch::Tensor&, sdk::ReduceOp, std::unique_ptr<sdk::Request>* request) noexcept override {
    return sdk::guard([&] { *request = std::make_unique<DoneRequest>(); });
  }
  // On one rank every algorithm is the identity.
  sdk::Status with_algorithm(sdk::Algorithm, sdk::Communicator** view) noexcept override {
    *view = this;
    return sdk::Status::Ok();
  }
  sdk::Status recv_any(torch::Tensor&, int, int*) noexcept override {
    return sdk::Status::Error("recv_any: a one-rank job has no peers");
  }

 private:
  sdk::Status counted() noexcept {
    ++stats_.calls;
    return sdk::Status::Ok();
  }
};

}  // namespace

std::unique_ptr<HostCommunicator> make_local_communicator() { return std::make_unique<LocalCommunicator>(); }

}  // namespace gradsweep::host
