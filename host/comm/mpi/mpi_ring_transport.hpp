#pragma once
// ring::Transport over MPI point-to-point: each exchange is an MPI_Irecv from the left neighbour and an
// MPI_Isend to the right one, finished together with MPI_Waitall. Internal to host/comm.
//
// The ring needs a communicator of its own (the backend duplicates one per thread of use): its messages
// then never match a strategy's send/recv/recv_any, whatever tags those use.
#include "comm/algorithms/ring.hpp"
#include "comm/forensics/peer_waits.hpp"

#include <mpi.h>

#include <array>
#include <string>

namespace gradsweep::comm::mpi {

class RingTransport final : public ring::Transport {
 public:
  // `call` names the collective in error messages ("allreduce (ring)"). `waits` (may be null): where an
  // exchange that takes long says which neighbour it still waits on, for the hang verdict; its ranks are
  // those of `comm`.
  RingTransport(MPI_Comm comm, int rank, int size, std::string call, PeerWaits* waits = nullptr);
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
  PeerWaits* waits_;
  // Requests by ticket mod kMaxInFlight: [0] the receive, [1] the send (MPI_REQUEST_NULL when skipped).
  std::array<std::array<MPI_Request, 2>, kMaxInFlight> requests_;
  Ticket next_ = 0, finished_ = 0;

  // The neighbours whose requests of `pair` are still pending, into waits_.
  void publish_waits(std::array<MPI_Request, 2>& pair);
};

}  // namespace gradsweep::comm::mpi
