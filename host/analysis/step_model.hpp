#pragma once
// The projected step of one configuration (docs/projection.md): compute measured on one rank and divided
// over the ranks that compute, communication from the alpha-beta model of the link it crosses, and the
// share of it hidden behind backward that the strategy showed when measured.
//
//   compute   = c x compute_1 / w                 w ranks compute (a server that only serves does not)
//   comm      = calls x 2(p-1) x alpha + bytes / beta      (bytes: the busiest rank's, in one direction)
//   hidden    = min(overlap x comm, c x backward_1 / w)
//   step      = compute + (comm - hidden) + c x update_1 + fixed
//   tokens/s  = tokens_per_step / step
//
// c >= 1 is the contention for cores: ranks x threads on one machine over its cores (1 when they fit).
// Left out by design: stragglers and the other ranks' waits, load from other processes, a communicator
// worker thread taking a core from compute, and anything that is not linear in the batch.
#include "analysis/link_fit.hpp"

namespace gradsweep::analysis {

struct StepInputs {
  int ranks = 1;            // p
  int computing_ranks = 1;  // w
  double compute_1_s = 0;   // forward + backward of the global batch on one rank
  double backward_1_s = 0;  // its backward part
  double update_1_s = 0;    // the update on one rank
  double fixed_s = 0;       // data, the strategy's other calls: per step, whatever p
  double contention = 1;    // c
  double bytes = 0;         // per step, the busiest rank, one direction
  double calls = 0;         // collectives per step
  double overlap = 0;       // share of communication the strategy hid behind backward, in [0, 1]
  double tokens_per_step = 0;
};

struct StepPrediction {
  double step_s = 0, compute_s = 0, comm_s = 0, exposed_comm_s = 0, update_s = 0, fixed_s = 0;
  double tokens_per_s = 0;
};

StepPrediction predict_step(const StepInputs& in, const LinkModel& link);

}  // namespace gradsweep::analysis
