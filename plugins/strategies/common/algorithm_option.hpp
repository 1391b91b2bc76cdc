#pragma once
// The `algorithm` option of strategies that can run on gradsweep's ring, its hierarchical allreduce
// (intra-node reduce-scatter, inter-node allreduce, intra-node all-gather; reduce_scatter and allgather
// stay the ring) or on the backend's collectives: its choices, its value, and its part of check_plan.
#include <gradsweep/sdk/capabilities.hpp>
#include <gradsweep/sdk/services.hpp>
#include <gradsweep/sdk/status.hpp>

#include <string>

namespace gradsweep::strategies {

inline constexpr const char* kAlgorithmChoices = "auto|ring|native|hierarchical";

// `offered`: the features of the backend the ranks run on. auto is gradsweep's ring where the backend
// offers it (MPI) and the backend's own collectives elsewhere (NCCL, whose allreduce is already a ring).
// The host has checked the value against kAlgorithmChoices; the throw guards direct use.
inline sdk::Algorithm algorithm_option(const sdk::Options& options, sdk::CommFeatures offered,
                                       const std::string& strategy) {
  const std::string& name = options.text("algorithm");
  if (name == "auto") return (offered & sdk::kRingAlgorithm) != 0 ? sdk::Algorithm::Ring : sdk::Algorithm::Native;
  if (name == "ring") return sdk::Algorithm::Ring;
  if (name == "native") return sdk::Algorithm::Native;
  if (name == "hierarchical") return sdk::Algorithm::Hierarchical;
  throw sdk::Error("strategy '" + strategy + "': algorithm '" + name +
                   "' is not one of auto, ring, native, hierarchical");
}

// gradsweep's ring and hierarchical allreduce run over the backend's point-to-point, which not every
// backend offers for them (NCCL: its own allreduce is already a ring): refused at plan time, not mid-run.
inline void check_algorithm_plan(const sdk::PlanFacts& facts, sdk::PlanAnswer& answer, const std::string& strategy) {
  const sdk::Algorithm algorithm = algorithm_option(*facts.options, facts.backend_features, strategy);
  const sdk::CommFeatures needed = algorithm == sdk::Algorithm::Ring           ? sdk::kRingAlgorithm
                                   : algorithm == sdk::Algorithm::Hierarchical ? sdk::kHierarchicalAlgorithm
                                                                               : 0;
  if ((facts.backend_features & needed) == needed) return;
  answer.about = "algorithm";
  answer.refusal = "strategy '" + strategy + "': algorithm " + facts.options->text("algorithm") +
                   " is gradsweep's own allreduce over point-to-point, which the " + facts.backend +
                   " backend does not offer on " + std::to_string(facts.world_size) +
                   " ranks; use algorithm: native (the backend's collectives), or runtime.comm: mpi";
}

}  // namespace gradsweep::strategies
