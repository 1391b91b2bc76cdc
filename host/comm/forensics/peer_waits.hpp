#pragma once
// Which peers this rank's unfinished point-to-point requests wait on, for the hang verdict (issue 27): a
// ring collective whose neighbour stopped answering looks, from the collective numbers alone, like that
// rank and its ring neighbours all being late; the peers each waiting rank points at say which one it is
// (comm/forensics/hang_verdict.hpp). Written by the transport that posts the requests (the MPI ring transport,
// comm/mpi/mpi_ring_transport.hpp), read when the flight recorder is dumped (comm/forensics/collective_forensics.hpp).
#include <map>
#include <mutex>
#include <vector>

namespace gradsweep::comm {

class PeerWaits {
 public:
  // `waiter` (a transport) now waits on `peers` (ranks of the communicator the recorder belongs to);
  // an empty list: it waits on nobody.
  void set(const void* waiter, std::vector<int> peers);
  void clear(const void* waiter) { set(waiter, {}); }
  // Every peer waited on, each once, in rank order.
  std::vector<int> peers() const;

 private:
  mutable std::mutex mutex_;
  std::map<const void*, std::vector<int>> by_waiter_;  // guarded by mutex_
};

}  // namespace gradsweep::comm
