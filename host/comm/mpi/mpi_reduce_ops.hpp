#pragma once
// The MPI_Op for a reduction of a tensor dtype. Internal to host/comm.
//
// MPI has no bfloat16 or half type: both travel as raw 16-bit words (MPI_UINT16_T). Reductions of them
// use user-defined MPI_Ops that widen each pair to float32, combine, and round back to 16 bits. We do
// not convert whole tensors to float32 instead: the wire would then carry 4 bytes an element, and a
// strategy that sends 16-bit gradients to halve its traffic would measure nothing. Rounding every
// partial result to 16 bits is what NCCL's bf16/fp16 reductions do too.
#include <gradsweep/sdk/services.hpp>

#include <mpi.h>

#include <torch/types.h>

namespace gradsweep::comm::mpi {

// MPI_SUM/MAX/MIN, or the 16-bit user-defined op. Throws std::invalid_argument on an unknown op.
MPI_Op reduce_op(torch::ScalarType dtype, sdk::ReduceOp op);

// Creates the user-defined ops; call once MPI runs, before any thread may need them.
void create_reduce_ops();

}  // namespace gradsweep::comm::mpi
