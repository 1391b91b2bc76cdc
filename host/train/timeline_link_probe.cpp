#include "train/timeline_link_probe.hpp"

#include <gradsweep/sdk/status.hpp>

#include <torch/torch.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace gradsweep::train {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::int64_t kPayloadFloats = 64 * 1024;  // 256 KiB
constexpr int kTries = 2;
constexpr int kHostWords = 8;  // host names up to 64 characters, packed into int64s for the allgather
// Tags no strategy uses at this point (the steps are over); distinct from each other so that a token is never
// taken for a payload.
constexpr int kTokenTag = 0x6c70, kPayloadTag = 0x6c71;

std::string this_host() {
  char name[kHostWords * 8 + 1] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// Every rank's host name, through one allgather.
std::vector<std::string> all_hosts(comm::HostCommunicator& comm) {
  const std::string mine = this_host();
  torch::Tensor packed = torch::zeros({kHostWords}, torch::kLong);
  std::memcpy(packed.data_ptr<std::int64_t>(), mine.data(), std::min<std::size_t>(mine.size(), kHostWords * 8));
  torch::Tensor all = torch::empty({kHostWords * comm.size()}, torch::kLong);
  sdk::check(comm.allgather(packed, all));
  std::vector<std::string> hosts;
  for (int r = 0; r < comm.size(); ++r) {
    const char* bytes = reinterpret_cast<const char*>(all.data_ptr<std::int64_t>() + r * kHostWords);
    hosts.emplace_back(bytes, strnlen(bytes, kHostWords * 8));
  }
  return hosts;
}

// One transfer of the payload from `src` to `dst`, timed on `dst` from its "go" token: the receiver's clock
// starts before the sender can start, so no clock needs to agree with another. Returns the seconds on dst,
// 0 on src.
double timed_transfer(comm::HostCommunicator& comm, int src, int dst, torch::Tensor& payload, torch::Tensor& token) {
  if (comm.rank() == dst) {
    const Clock::time_point t0 = Clock::now();
    sdk::check(comm.send(token, src, kTokenTag));
    sdk::check(comm.recv(payload, src, kPayloadTag));
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }
  sdk::check(comm.recv(token, dst, kTokenTag));
  sdk::check(comm.send(payload, dst, kPayloadTag));
  return 0;
}

// The round of the pair (node i, node i+1 mod n): pairs of one round share no node (even i, odd i, and for
// odd n the wrap-around pair alone), and each leader takes its pairs in round order, so no cycle of waits.
int round_of(int i, int n) { return (n % 2 == 1 && i == n - 1) ? 2 : i % 2; }

// This leader's times for the transfers into it: [0] from the node before it, [1] from the node after it.
std::vector<double> probe_as_leader(comm::HostCommunicator& comm, const std::vector<int>& leaders, int me) {
  const int n = static_cast<int>(leaders.size());
  torch::Tensor payload = torch::zeros({kPayloadFloats}, torch::kFloat), token = torch::zeros({1}, torch::kFloat);
  std::vector<double> in(2, INFINITY);
  for (int round = 0; round < 3; ++round)
    for (const int pair : {(me - 1 + n) % n, me}) {  // pair i joins node i and node i+1
      if (round_of(pair, n) != round) continue;
      const int a = leaders[static_cast<std::size_t>(pair)], b = leaders[static_cast<std::size_t>((pair + 1) % n)];
      for (int t = 0; t < kTries; ++t) {
        const double ab = timed_transfer(comm, a, b, payload, token), ba = timed_transfer(comm, b, a, payload, token);
        // I am b of my pair with the node before me (transfer a->b is into me), a of the one after me.
        if (pair != me) in[0] = std::min(in[0], ab);
        if (pair == me) in[1] = std::min(in[1], ba);
      }
    }
  return in;
}

}  // namespace

nlohmann::json probe_links(comm::HostCommunicator& comm) {
  nlohmann::json out{{"link_straggler_index", nullptr}, {"slow_link_rank", nullptr}, {"slow_link_host", nullptr}};
  const Clock::time_point start = Clock::now();
  const std::vector<std::string> hosts = comm.size() > 1 ? all_hosts(comm) : std::vector<std::string>{this_host()};
  std::vector<int> leaders;  // the first rank of each host, in rank order: the ring of nodes
  for (int r = 0; r < comm.size(); ++r)
    if (std::find(hosts.begin(), hosts.begin() + r, hosts[static_cast<std::size_t>(r)]) == hosts.begin() + r)
      leaders.push_back(r);
  const int n = static_cast<int>(leaders.size());
  out["link_probe"] = {{"nodes", n}, {"bytes", kPayloadFloats * 4}};
  if (n < 3) return out;

  const auto mine = std::find(leaders.begin(), leaders.end(), comm.rank());
  std::vector<double> in(2, 0.0);
  if (mine != leaders.end()) in = probe_as_leader(comm, leaders, static_cast<int>(mine - leaders.begin()));
  torch::Tensor all = torch::empty({2 * comm.size()}, torch::kDouble);
  sdk::check(comm.allgather(torch::tensor(in, torch::kDouble), all));
  const auto t = all.accessor<double, 1>();
  // into(k, 0): transfer node k-1 -> k; into(k, 1): node k+1 -> k.
  auto into = [&](int k, int side) { return t[2 * leaders[static_cast<std::size_t>((k + n) % n)] + side]; };
  std::vector<double> figure(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) {
    const double with_before = std::max(into(k, 0), into(k - 1, 1));  // the pair (k-1, k): its slower direction
    const double with_after = std::max(into(k, 1), into(k + 1, 0));   // the pair (k, k+1)
    figure[static_cast<std::size_t>(k)] = std::min(with_before, with_after);
  }
  std::vector<double> sorted = figure;
  std::sort(sorted.begin(), sorted.end());
  const double mid = n % 2 == 1
                         ? sorted[static_cast<std::size_t>(n / 2)]
                         : (sorted[static_cast<std::size_t>(n / 2 - 1)] + sorted[static_cast<std::size_t>(n / 2)]) / 2;
  const int slowest = static_cast<int>(std::max_element(figure.begin(), figure.end()) - figure.begin());
  // Lists by node, like step_breakdown.by_rank (results.csv joins each with ';').
  nlohmann::json by_node{
      {"host", nlohmann::json::array()}, {"rank", nlohmann::json::array()}, {"seconds", nlohmann::json::array()}};
  for (int k = 0; k < n; ++k) {
    const int rank = leaders[static_cast<std::size_t>(k)];
    by_node["host"].push_back(hosts[static_cast<std::size_t>(rank)]);
    by_node["rank"].push_back(rank);
    by_node["seconds"].push_back(figure[static_cast<std::size_t>(k)]);
  }
  if (mid > 0) {
    out["link_straggler_index"] = figure[static_cast<std::size_t>(slowest)] / mid;
    out["slow_link_rank"] = leaders[static_cast<std::size_t>(slowest)];
    out["slow_link_host"] = hosts[static_cast<std::size_t>(leaders[static_cast<std::size_t>(slowest)])];
  }
  out["link_probe"]["by_node"] = by_node;
  out["link_probe"]["seconds"] = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace gradsweep::train
