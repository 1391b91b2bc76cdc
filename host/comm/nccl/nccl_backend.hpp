#pragma once
// The NCCL backend: every rank of the job, CUDA tensors, one NCCL call per collective. Built only when
// CMake found NCCL and the CUDA runtime (GRADSWEEP_WITH_NCCL); nccl.h and cuda_runtime.h stay behind
// comm/nccl/nccl_communicator.hpp (the class, internal to host/comm), so including this header needs neither.
#include "comm/core/host_communicator.hpp"

#include <functional>
#include <memory>
#include <string>

namespace gradsweep::comm {

// Whether this build has the NCCL backend.
constexpr bool nccl_built() {
#if defined(GRADSWEEP_WITH_NCCL) && GRADSWEEP_WITH_NCCL
  return true;
#else
  return false;
#endif
}

#if defined(GRADSWEEP_WITH_NCCL) && GRADSWEEP_WITH_NCCL
// `device_index` is the GPU this rank uses (runtime.device: cuda:N), or -1 for "local rank modulo the GPUs
// this node shows"; either way it becomes the calling thread's current device, so that LibTorch's plain
// "cuda" means the same GPU. Rank and size come from MPI when an MPI launcher started the process (the
// ncclUniqueId travels over `mpi_bootstrap()`, the MPI backend as the registry makes it: in the stack's
// layers, so that a rank that never joins the broadcast is a hang); a process with no launcher is rank 0 of 1
// and starts no MPI. Throws std::runtime_error with the failing call's message when there is no CUDA device
// or NCCL cannot start.
using MpiBootstrap = std::function<std::unique_ptr<HostCommunicator>()>;
std::unique_ptr<HostCommunicator> make_nccl_communicator(int device_index, const MpiBootstrap& mpi_bootstrap);

// "GPU 0 (NVIDIA H200), NCCL 2.28.9, CUDA runtime 13.0" for the log; "" for another backend.
std::string describe_nccl_communicator(const HostCommunicator& comm);
#endif

}  // namespace gradsweep::comm
