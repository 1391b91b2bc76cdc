#pragma once
// The MPI library's lifetime in this process: started once, finished at exit, and the one way to stop
// a whole job when one rank cannot go on. mpi.h stays out of this header on purpose: only the files in
// host/comm talk to MPI directly.
#include <string>

namespace gradsweep::comm::mpi {

// True when an MPI launcher started this process: mpirun (OMPI_COMM_WORLD_SIZE), a PMIx launcher such
// as `srun --mpi=pmix` (PMIX_RANK) or a PMI-1/2 one such as `srun --mpi=pmi2` or MPICH's hydra (PMI_SIZE).
bool launched_by_mpi();

// Starts MPI for this process if nothing has yet: MPI_Init_thread asking for MPI_THREAD_MULTIPLE, with
// MPI_Finalize registered to run at exit. Returns the thread level the library granted (an MPI_THREAD_*
// value). Safe to call again; throws std::runtime_error when MPI cannot start.
int ensure_initialized();

// MPI is running (initialised, not yet finalised), whoever started it.
bool active();

// "MPI_THREAD_MULTIPLE" and friends, for logs.
std::string thread_level_name(int level);

// Whether `level` lets several threads call MPI at once (MPI_THREAD_MULTIPLE).
bool is_thread_multiple(int level);

// MPI_Error_string of an MPI error code, with the error class when it says more.
std::string error_message(int code);

// Ends every rank of the job with `exit_code`: MPI_Abort(MPI_COMM_WORLD) while MPI is running, plain
// _Exit otherwise. The caller logs why first: the ranks that are killed say nothing. Never returns.
[[noreturn]] void abort_job(int exit_code) noexcept;

// The watchdog's end of a job (comm/forensics/collective_timeout.hpp): logs which call waited how long for ranks
// that never joined it, then ends every rank with `exit_code`. Shared by the MPI and NCCL backends.
[[noreturn]] void end_hung_job(const std::string& what, double waited, double limit, int exit_code);

}  // namespace gradsweep::comm::mpi
