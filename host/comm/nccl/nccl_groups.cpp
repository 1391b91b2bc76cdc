// The NCCL backend's sub-communicators (sdk::Group): ncclCommSplit of this communicator, each group a full
// NcclCommunicator of its own (streams, flight recorder, watchdog) wrapped in a HostGroup under its name,
// its counters adding into this communicator's (HostCommunicator::link_to_parent).
//
// NCCL says nothing about nodes, so the first split gathers every rank's place once (its rank in the job
// and its node: GRADSWEEP_RANKS_PER_NODE's fake nodes, or the host name): one small allgather, counted as
// a call of this communicator. A split gathers the colors too, so that a negative one is refused on every
// rank alike instead of leaving the others inside ncclCommSplit.
#include "comm/core/host_group.hpp"
#include "comm/mpi/mpi_node_split.hpp"
#include "comm/nccl/nccl_communicator.hpp"
#include "comm/nccl/nccl_watched_call.hpp"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <map>

namespace gradsweep::comm {
namespace {

// This process's node, the same number on every rank of the node.
int node_key(int job_rank) {
  if (const int per_node = mpi::ranks_per_node_override(); per_node > 0) return job_rank / per_node;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return static_cast<int>(std::hash<std::string>{}(host)&INT_MAX);
}

// Every rank's pair of ints, gathered over `comm` on its GPU.
std::vector<std::array<int, 2>> gather_pairs(sdk::Communicator& comm, int device, int a, int b) {
  const auto options = torch::TensorOptions().dtype(torch::kInt).device(torch::kCUDA, device);
  const torch::Tensor mine = torch::tensor({a, b}, torch::kInt).to(options.device());
  torch::Tensor all = torch::empty({2 * static_cast<std::int64_t>(comm.size())}, options);
  sdk::check(comm.allgather(mine, all));
  const torch::Tensor host = all.cpu();
  const int* p = host.data_ptr<int>();
  std::vector<std::array<int, 2>> pairs(static_cast<std::size_t>(comm.size()));
  for (std::size_t r = 0; r < pairs.size(); ++r) pairs[r] = {p[2 * r], p[2 * r + 1]};
  return pairs;
}

}  // namespace

NcclCommunicator::NcclCommunicator(NcclCommunicator& parent, ncclComm_t comm, const std::string& name,
                                   const GroupPlace& place)
    : NcclCommunicator(Bare{}) {
  comm_ = comm;
  link_to_parent(parent, name);
  device_ = parent.device_;
  check_nccl(ncclCommUserRank(comm_, &rank_), name, "ncclCommUserRank");
  check_nccl(ncclCommCount(comm_, &size_), name, "ncclCommCount");
  local_rank_ = place.local_rank;
  local_size_ = place.local_size;
  job_rank_ = parent.job_rank_;
  forensics_.set_rank(rank_, size_);
  forensics_.set_group(name, place.job_ranks);
  check_cuda(cudaSetDevice(device_), name, "cudaSetDevice");
  create_resources();
  description_ = parent.description_ + ", group " + name;
}

const std::vector<std::array<int, 2>>& NcclCommunicator::layout() {
  if (layout_.empty()) layout_ = gather_pairs(*this, device_, job_rank_, node_key(job_rank_));
  return layout_;
}

std::unique_ptr<sdk::Group> NcclCommunicator::split_by(const std::vector<std::array<int, 2>>& color_key,
                                                       const std::string& name) {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
  const auto& places = layout();
  const auto mine = color_key[static_cast<std::size_t>(rank_)];
  // The group's members in NCCL's order (key, then rank here); its ranks on this rank's node.
  std::vector<int> members;
  for (int r = 0; r < size_; ++r)
    if (color_key[static_cast<std::size_t>(r)][0] == mine[0]) members.push_back(r);
  std::stable_sort(members.begin(), members.end(), [&](int x, int y) {
    return color_key[static_cast<std::size_t>(x)][1] < color_key[static_cast<std::size_t>(y)][1];
  });
  GroupPlace place{0, 0, {}};
  const int node = places[static_cast<std::size_t>(rank_)][1];
  for (const int m : members) {
    place.job_ranks.push_back(places[static_cast<std::size_t>(m)][0]);
    if (places[static_cast<std::size_t>(m)][1] != node) continue;
    if (m == rank_) place.local_rank = place.local_size;
    ++place.local_size;
  }
  ncclComm_t part = nullptr;
  {
    const std::lock_guard<std::mutex> lock(issue_mutex_);  // in the same order as every other NCCL call
    check_usable();
    watched(forensics_.timeout(), name + where(),
            [&] { check_nccl(ncclCommSplit(comm_, mine[0], mine[1], &part, nullptr), name, "ncclCommSplit"); });
  }
  // The group owns `part` from its first statement: if its constructor throws, its destructor frees it.
  std::unique_ptr<NcclCommunicator> impl(new NcclCommunicator(*this, part, name, place));
  return std::make_unique<HostGroup>(std::move(impl));
#else
  (void)color_key;
  throw std::runtime_error(name + ": sub-communicators need NCCL 2.18 or newer (ncclCommSplit); this build has " +
                           std::to_string(NCCL_VERSION_CODE));
#endif
}

sdk::Status NcclCommunicator::split(int color, int key, std::unique_ptr<sdk::Group>* group) noexcept {
  if (sdk::Status gone = parent_status("split"); !gone.ok) return gone;
  return sdk::guard([&] {
    if (group == nullptr) throw std::invalid_argument("split: group is null");
    layout();  // first, in the same order on every rank
    const auto colors = gather_pairs(*this, device_, color, key);
    for (int r = 0; r < size_; ++r)
      if (colors[static_cast<std::size_t>(r)][0] < 0)
        throw std::invalid_argument(negative_color_error(colors[static_cast<std::size_t>(r)][0], r));
    *group = split_by(colors, split_name(color));
  });
}

// Node: color = the node's number (ordered by its lowest rank here), key = the rank here. AcrossNodes:
// color = the rank's place on its node, key = the node's number.
sdk::Status NcclCommunicator::group(sdk::GroupKind kind, std::unique_ptr<sdk::Group>* group) noexcept {
  if (sdk::Status gone = parent_status("group"); !gone.ok) return gone;
  return sdk::guard([&] {
    if (group == nullptr) throw std::invalid_argument("group: group is null");
    const std::string name = group_kind_name(kind);
    const auto& places = layout();
    std::map<int, int> node_number;  // node key -> number, in order of first appearance
    std::map<int, int> seen_on_node;
    std::vector<std::array<int, 2>> color_key(places.size());
    for (std::size_t r = 0; r < places.size(); ++r) {
      const int key = places[r][1];
      const int number = node_number.emplace(key, static_cast<int>(node_number.size())).first->second;
      const int place = seen_on_node[key]++;
      color_key[r] = kind == sdk::GroupKind::Node ? std::array<int, 2>{number, static_cast<int>(r)}
                                                  : std::array<int, 2>{place, number};
    }
    *group = split_by(color_key, name);
  });
}

}  // namespace gradsweep::comm
