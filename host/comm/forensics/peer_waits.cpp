#include "comm/forensics/peer_waits.hpp"

#include <algorithm>

namespace gradsweep::comm {

void PeerWaits::set(const void* waiter, std::vector<int> peers) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (peers.empty())
    by_waiter_.erase(waiter);
  else
    by_waiter_[waiter] = std::move(peers);
}

std::vector<int> PeerWaits::peers() const {
  std::vector<int> all;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [waiter, peers] : by_waiter_) all.insert(all.end(), peers.begin(), peers.end());
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

}  // namespace gradsweep::comm
