#include "comm/mpi/mpi_node_split.hpp"

#include "comm/mpi/mpi_buffer.hpp"
#include "comm/mpi/mpi_runtime.hpp"
#include "env/environment.hpp"

#include <cstdlib>
#include <stdexcept>

namespace gradsweep::comm::mpi {

int ranks_per_node_override() {
  return static_cast<int>(env::positive_integer("GRADSWEEP_RANKS_PER_NODE", 1 << 20).value_or(0));
}

// Fake nodes are blocks of the job's ranks, so that a sub-communicator (whose own ranks are renumbered)
// sees the same nodes as the job.
MPI_Comm split_node(MPI_Comm parent, const std::string& call) {
  int rank = 0, job_rank = 0;
  MPI_Comm_rank(parent, &rank);
  MPI_Comm_rank(MPI_COMM_WORLD, &job_rank);
  MPI_Comm node = MPI_COMM_NULL;
  const int per_node = ranks_per_node_override();
  if (per_node > 0)
    check_mpi(MPI_Comm_split(parent, job_rank / per_node, rank, &node), call, "MPI_Comm_split");
  else
    check_mpi(MPI_Comm_split_type(parent, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node), call,
              "MPI_Comm_split_type");
  MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
  return node;
}

NodeSplit::NodeSplit(MPI_Comm parent) {
  int rank = 0;
  MPI_Comm_rank(parent, &rank);
  node_ = split_node(parent, "hierarchical split");
  MPI_Comm_rank(node_, &node_rank_);
  MPI_Comm_size(node_, &node_size_);
  check_mpi(MPI_Comm_split(parent, node_rank_, rank, &cross_), "hierarchical split", "MPI_Comm_split");
  MPI_Comm_set_errhandler(cross_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(cross_, &cross_rank_);
  MPI_Comm_size(cross_, &cross_size_);
  // Chunk r of the intra-node cut must mean the same elements on every node: only when all nodes have
  // the same number of ranks.
  int sizes[2] = {node_size_, -node_size_};
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT, MPI_MIN, parent), "hierarchical split", "MPI_Allreduce");
  const int smallest = sizes[0], largest = -sizes[1];
  if (smallest != largest)
    uneven_ = "nodes have between " + std::to_string(smallest) + " and " + std::to_string(largest) +
              " ranks (hierarchical allreduce needs equal nodes)";
}

NodeSplit::~NodeSplit() {
  for (MPI_Comm* c : {&node_, &cross_})
    if (*c != MPI_COMM_NULL && active()) MPI_Comm_free(c);
}

}  // namespace gradsweep::comm::mpi
