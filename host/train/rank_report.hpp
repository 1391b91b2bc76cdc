#pragma once
// What every rank did in a step, gathered on every rank in one small allgather: the training loss of
// the ranks that compute, and each rank's communication counters (so rank 0's metrics show a parameter
// server's traffic beside its workers'). The trainer's own reporting traffic is not counted as the
// strategy's.
#include "comm/core/host_communicator.hpp"

#include <vector>

namespace gradsweep::train {

struct RankStep {
  bool computes = true;
  double loss_sum = 0.0;    // sum of this rank's micro-batch losses
  double loss_count = 0.0;  // how many
  comm::CommStats comm;
};

struct StepReport {
  double mean_loss = 0.0;  // over every micro-batch of every computing rank
  std::vector<RankStep> ranks;
};

StepReport gather_step_report(comm::HostCommunicator& comm, const RankStep& mine);

// This rank's position among the ranks that compute, and their number (for splitting each batch).
struct ComputeGroup {
  int index = 0;
  int count = 1;
};
ComputeGroup compute_group(comm::HostCommunicator& comm, bool computes);

}  // namespace gradsweep::train
