#pragma once
// What each built-in backend offers on `world` ranks (sdk::Communicator::features): what its
// communicators answer, and what the registry (comm/registry/backend_registry.hpp) tells the planner.
#include <gradsweep/sdk/capabilities.hpp>

namespace gradsweep::comm {

inline constexpr sdk::CommFeatures kAllCommFeatures = sdk::kPointToPoint | sdk::kRecvAny | sdk::kRingAlgorithm |
                                                      sdk::kHierarchicalAlgorithm | sdk::kAsyncCollectives |
                                                      sdk::kGroups;

// One rank has no peers to address, so every algorithm is the identity there and nothing is refused.
inline sdk::CommFeatures local_features() { return kAllCommFeatures; }
inline sdk::CommFeatures mpi_features(int /*world*/) { return kAllCommFeatures; }
// NCCL has no any-source receive, and gradsweep's ring and hierarchical allreduce run over MPI's
// point-to-point only (NCCL's own allreduce is already a ring).
inline sdk::CommFeatures nccl_features(int world) {
  return world <= 1 ? kAllCommFeatures : sdk::kPointToPoint | sdk::kAsyncCollectives | sdk::kGroups;
}

}  // namespace gradsweep::comm
