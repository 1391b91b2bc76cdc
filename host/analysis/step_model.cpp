#include "analysis/step_model.hpp"

#include <algorithm>

namespace gradsweep::analysis {

StepPrediction predict_step(const StepInputs& in, const LinkModel& link) {
  const double c = std::max(1.0, in.contention), w = std::max(1, in.computing_ranks);
  StepPrediction out;
  out.compute_s = c * in.compute_1_s / w;
  out.comm_s = link.seconds(in.bytes, in.calls, in.ranks);
  const double hidden = std::min(std::clamp(in.overlap, 0.0, 1.0) * out.comm_s, c * in.backward_1_s / w);
  out.exposed_comm_s = out.comm_s - hidden;
  out.update_s = c * in.update_1_s;
  out.fixed_s = in.fixed_s;
  out.step_s = out.compute_s + out.exposed_comm_s + out.update_s + out.fixed_s;
  out.tokens_per_s = out.step_s > 0 ? in.tokens_per_step / out.step_s : 0;
  return out;
}

}  // namespace gradsweep::analysis
