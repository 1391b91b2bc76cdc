#pragma once
// ring::Transport over MPI point-to-point: each exchange is MPI_Irecv from the left neighbour and MPI_Isend
// to the right one (each cut into messages of at most 512 KiB, see the .cpp), finished together. Internal
// to host/comm.
//
// The ring needs a communicator of its own (the backend duplicates one per thread of use): its messages
// then never match a strategy's send/recv/recv_any, whatever tags those use.
#include "comm/algorithms/ring.hpp"

#include <mpi.h>

#include <array>
#include <string>
#include <vector>

namespace gradsweep::host::mpi {

class RingTransport final : public ring::Transport {
 public:
  // `call` names the collective in error messages ("allreduce (ring)").
  RingTransport(MPI_Comm comm, int rank, int size, std::string call);
  ~RingTransport() override;
  RingTransport(const RingTransport&) = delete;
  RingTransport& operator=(const RingTransport&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Ticket start(const void* send, std::size_t send_bytes, void* recv, std::size_t recv_bytes) override;
  void finish(Ticket ticket) override;

 private:
  MPI_Comm comm_;
  int rank_, size_, left_, right_;
  std::string call_;
  // Requests by ticket mod kMaxInFlight: the receive's pieces, then the send's (none for a skipped side).
  std::array<std::vector<MPI_Request>, kMaxInFlight> requests_;
  std::vector<MPI_Status> statuses_;
  Ticket next_ = 0, finished_ = 0;
};

}  // namespace gradsweep::host::mpi
