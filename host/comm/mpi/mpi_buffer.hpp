#pragma once
// Tensors as MPI buffers, and the argument checks every MPI call makes before any traffic: a bad
// argument fails the call on the rank that passed it with a message naming the call and the tensor,
// and since every rank makes the same mistake, no rank is left waiting. Internal to host/comm.
#include "comm/core/dtype_name.hpp"

#include <mpi.h>

#include <torch/types.h>

#include <cstdint>
#include <string>

namespace gradsweep::comm::mpi {

// A contiguous CPU tensor of a supported type, seen as (pointer, count, MPI type).
struct Buffer {
  void* data;
  int count;
  MPI_Datatype type;
  std::uint64_t bytes;
};

// Checks that `t` is a defined, contiguous CPU tensor of a dtype the backend moves, with at most 2^31-1
// elements; throws std::invalid_argument naming `call` and the tensor's `role` ("input", "the", ...).
Buffer buffer_of(const torch::Tensor& t, const std::string& call, const char* role);

// "allreduce of 1024 float32 (4096 bytes)": what the watchdog and error messages call the operation.
std::string describe(const std::string& call, const torch::Tensor& t);

// Throws std::runtime_error "<call>: <function> failed: <MPI's message>" unless rc is MPI_SUCCESS.
void check_mpi(int rc, const std::string& call, const char* function);

// allgather: same dtypes, output = ranks x input. reduce_scatter: same dtypes, input = ranks x output.
void check_allgather_shapes(const torch::Tensor& input, const torch::Tensor& output, int ranks,
                            const std::string& call);
void check_reduce_scatter_shapes(const torch::Tensor& input, const torch::Tensor& output, int ranks,
                                 const std::string& call);

}  // namespace gradsweep::comm::mpi
