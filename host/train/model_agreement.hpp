#pragma once
// Before any strategy communicates, the ranks compare their models: a rank whose parameters differ in
// number, name or shape (another config, another build of a plugin) would otherwise feed collectives of
// mismatched sizes, which hang or corrupt memory deep inside MPI. Every rank gets the same verdict and
// the error names the ranks and the first tensor that differs.
#include "comm/core/host_communicator.hpp"

#include <gradsweep/sdk/model.hpp>

#include <vector>

namespace gradsweep::train {

// Throws std::runtime_error on every rank when any rank's parameter list differs from rank 0's.
void check_models_agree(comm::HostCommunicator& comm, const std::vector<sdk::Parameter>& params);

}  // namespace gradsweep::train
