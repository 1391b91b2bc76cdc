#pragma once
// Tensors as NCCL buffers, and the argument checks the NCCL backend makes before any traffic
// (comm/nccl/nccl_communicator.cpp, nccl_async.cpp). Internal to host/comm; built only with NCCL.
#include <gradsweep/sdk/services.hpp>

#include <nccl.h>

#include <torch/types.h>

#include <cstdint>
#include <string>

namespace gradsweep::comm::nccl {

ncclRedOp_t nccl_op(sdk::ReduceOp op);

bool overlap(const torch::Tensor& a, const torch::Tensor& b);

// A tensor as NCCL sees it. A CUDA tensor on this rank's GPU is used in place; a CPU tensor (the
// trainer's scalar reductions, a strategy's small bookkeeping) is staged through the GPU and copied
// back by finish(). Staging costs two copies: strategies should hand CUDA tensors.
struct DeviceBuffer {
  torch::Tensor user;    // what the caller passed
  torch::Tensor device;  // what NCCL reads and writes: `user` itself unless staged
  ncclDataType_t type;
  std::size_t count;
  std::uint64_t bytes;
  bool staged() const { return !user.is_same(device); }
  void* data() const { return count == 0 ? nullptr : device.data_ptr(); }
  // Copies a staged result back to the caller's tensor.
  void finish() {
    if (staged()) user.copy_(device);
  }
};

// Checks that `t` is a defined, contiguous tensor of a dtype NCCL moves, on `gpu` or the CPU; throws
// std::invalid_argument naming `call` and the tensor's `role` ("input", "the", ...).
DeviceBuffer device_buffer(const torch::Tensor& t, int gpu, const std::string& call, const char* role);

// allgather: same dtypes, output = ranks x input; the input is then copied first if it overlaps the
// output other than as this rank's own slot (which NCCL allows).
void prepare_allgather(DeviceBuffer& in, const DeviceBuffer& out, int rank, int ranks, const std::string& call);
// reduce_scatter: same dtypes, input = ranks x output; an output overlapping the input other than as
// this rank's slot is replaced by scratch that finish() copies back.
void prepare_reduce_scatter(const DeviceBuffer& in, DeviceBuffer& out, int rank, int ranks, const std::string& call);

}  // namespace gradsweep::comm::nccl
