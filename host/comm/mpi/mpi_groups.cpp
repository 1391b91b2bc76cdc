// The MPI backend's sub-communicators (sdk::Group): MPI_Comm_split of the main communicator, each group a
// full MpiCommunicator of its own (asynchronous worker, ring and hierarchical views), wrapped in a HostGroup
// under its name. Its counters add into this communicator's (HostCommunicator::link_to_parent); the stack's
// layers re-make the group around themselves (comm/layers/communicator_layer.hpp), so its dumps and hang verdicts
// name it.
#include "comm/core/host_group.hpp"
#include "comm/mpi/mpi_buffer.hpp"
#include "comm/mpi/mpi_communicator.hpp"

#include <stdexcept>

namespace gradsweep::comm {

std::unique_ptr<sdk::Group> MpiCommunicator::make_group(MPI_Comm split, const std::string& name) {
  MPI_Comm_set_errhandler(split, MPI_ERRORS_RETURN);
  std::unique_ptr<HostCommunicator> impl;
  try {
    impl = std::make_unique<MpiCommunicator>(split, this, name);
  } catch (...) {
    MPI_Comm_free(&split);
    throw;
  }
  MPI_Comm_free(&split);  // the group works on its own duplicates
  return std::make_unique<HostGroup>(std::move(impl));
}

sdk::Status MpiCommunicator::split(int color, int key, std::unique_ptr<sdk::Group>* group) noexcept {
  if (sdk::Status s = usable(); !s.ok) return s;
  return sdk::guard([&] {
    if (group == nullptr) throw std::invalid_argument("split: group is null");
    // Every rank learns the least color first, so that a negative one is refused on every rank alike,
    // instead of leaving the others waiting in MPI_Comm_split for a rank that refused alone.
    struct {
      int value, rank;
    } mine{color, rank_}, least{color, rank_};
    mpi::check_mpi(MPI_Allreduce(&mine, &least, 1, MPI_2INT, MPI_MINLOC, comm_), "split", "MPI_Allreduce");
    if (least.value < 0) throw std::invalid_argument(negative_color_error(least.value, least.rank));
    MPI_Comm part = MPI_COMM_NULL;
    mpi::check_mpi(MPI_Comm_split(comm_, color, key, &part), "split", "MPI_Comm_split");
    *group = make_group(part, split_name(color));
  });
}

// Node: the ranks on this rank's node (mpi::split_node, so GRADSWEEP_RANKS_PER_NODE's fake nodes too).
// AcrossNodes: the ranks with this rank's place on its node, one per node, ordered by each node's lowest
// rank here.
sdk::Status MpiCommunicator::group(sdk::GroupKind kind, std::unique_ptr<sdk::Group>* group) noexcept {
  if (sdk::Status s = usable(); !s.ok) return s;
  return sdk::guard([&] {
    if (group == nullptr) throw std::invalid_argument("group: group is null");
    const std::string name = group_kind_name(kind);
    const std::string call = "group(" + name + ")";
    MPI_Comm node = mpi::split_node(comm_, call);
    if (kind == sdk::GroupKind::Node) {
      *group = make_group(node, name);
      return;
    }
    int node_rank = 0, leader = rank_;
    MPI_Comm_rank(node, &node_rank);
    const int rc = MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    mpi::check_mpi(rc, call, "MPI_Allreduce");
    MPI_Comm across = MPI_COMM_NULL;
    mpi::check_mpi(MPI_Comm_split(comm_, node_rank, leader, &across), call, "MPI_Comm_split");
    *group = make_group(across, name);
  });
}

}  // namespace gradsweep::comm
