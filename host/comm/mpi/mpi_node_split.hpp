#pragma once
// The two communicators hierarchical allreduce runs over (comm/algorithms/hierarchical.hpp): `node`, the
// ranks sharing memory with this one (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)), and `cross`, the ranks
// of every node with this rank's local rank. GRADSWEEP_RANKS_PER_NODE=K replaces the shared-memory split
// by consecutive blocks of K ranks, so that tests and benchmarks on one machine see several "nodes"
// (every rank must see the same value: mpirun -x). Internal to host/comm.
#include <mpi.h>

#include <string>
#include <vector>

namespace gradsweep::comm::mpi {

class NodeSplit {
 public:
  // Collective over `parent`: every rank of it must construct one at the same point.
  explicit NodeSplit(MPI_Comm parent);
  ~NodeSplit();
  NodeSplit(const NodeSplit&) = delete;
  NodeSplit& operator=(const NodeSplit&) = delete;

  MPI_Comm node() const { return node_; }
  MPI_Comm cross() const { return cross_; }
  int node_rank() const { return node_rank_; }
  int node_size() const { return node_size_; }
  int cross_rank() const { return cross_rank_; }
  int cross_size() const { return cross_size_; }
  // Empty when every node has as many ranks as every other; otherwise why hierarchical runs as the flat ring.
  const std::string& uneven() const { return uneven_; }

 private:
  MPI_Comm node_ = MPI_COMM_NULL, cross_ = MPI_COMM_NULL;
  int node_rank_ = 0, node_size_ = 1, cross_rank_ = 0, cross_size_ = 1;
  std::string uneven_;
};

// GRADSWEEP_RANKS_PER_NODE, or 0 when unset (then nodes are the shared-memory split).
int ranks_per_node_override();

// The ranks of `parent` on this rank's node, numbered by their rank in `parent`: the shared-memory split,
// or with GRADSWEEP_RANKS_PER_NODE=K the ranks whose rank in the job (MPI_COMM_WORLD) divided by K is this
// rank's. Collective over `parent`; the caller frees the result. Errors name `call`.
MPI_Comm split_node(MPI_Comm parent, const std::string& call);

}  // namespace gradsweep::comm::mpi
