// Sub-communicators of the thread-ranks harness (ABI 1.8): ThreadCommunicator::split and ::group make a
// ThreadCommunicator over a context of the same hub, held as the host's backends hold theirs (HostGroup).
#include "support/thread_communicator.hpp"

#include "comm/core/host_group.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>

namespace gradsweep::test {

sdk::Status ThreadCommunicator::split(int color, int key, std::unique_ptr<sdk::Group>* group) noexcept {
  return sdk::guard([&] { *group = make_group(color, key, comm::split_name(color), "split"); });
}

// Node: the ranks of this rank's node, in this communicator's order. AcrossNodes: the ranks with this
// local rank, one per node, in node order.
sdk::Status ThreadCommunicator::group(sdk::GroupKind kind, std::unique_ptr<sdk::Group>* group) noexcept {
  return sdk::guard([&] {
    const std::string name = comm::group_kind_name(kind);  // throws for an unknown kind
    const bool node = kind == sdk::GroupKind::Node;
    *group = make_group(node ? node_of(world_rank_) : local_rank_, node ? rank_ : node_of(world_rank_), name,
                        "group(" + name + ")");
  });
}

// Every rank first learns every rank's (color, key), as MPI_Comm_split does, so that a negative color is
// refused on every rank alike instead of leaving the others waiting for it. The exchange is this
// communicator's next blocking collective (split is ordered with them) and is not counted: it is setup,
// not the strategy's traffic.
std::unique_ptr<sdk::Group> ThreadCommunicator::make_group(int color, int key, const std::string& name,
                                                           const std::string& call) {
  torch::Tensor table = torch::empty({size_, 2}, torch::kLong);
  CollectiveCall exchange =
      gather(sdk::Algorithm::Native, torch::tensor({std::int64_t{color}, std::int64_t{key}}), table, call);
  exchange.what = call + " (the ranks' colors and keys)";
  blocking(std::move(exchange));
  auto rows = table.accessor<std::int64_t, 2>();
  for (int r = 0; r < size_; ++r)
    if (rows[r][0] < 0) throw std::invalid_argument(comm::negative_color_error(static_cast<int>(rows[r][0]), r));
  std::vector<int> chosen;
  for (int r = 0; r < size_; ++r)
    if (rows[r][0] == color) chosen.push_back(r);
  // By key, ties broken by rank here (stable sort over ranks in order).
  std::stable_sort(chosen.begin(), chosen.end(), [&](int a, int b) { return rows[a][1] < rows[b][1]; });
  ThreadRanksShape shape;
  shape.name = name;
  for (int r : chosen) shape.members.push_back(shape_.members[static_cast<std::size_t>(r)]);
  shape.context = hub_.context(shape_.context, splits_++, color, shape.members, name);
  return std::make_unique<comm::HostGroup>(
      std::make_unique<ThreadCommunicator>(hub_, std::move(shape), world_rank_, options_, *this));
}

}  // namespace gradsweep::test
