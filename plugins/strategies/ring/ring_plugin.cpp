// `ring`: float32 gradients allreduced in fused buckets during backward.
#include "ring_strategy.hpp"

#include <gradsweep/sdk/plugin.hpp>

namespace {
class Ring final : public gradsweep::strategies::RingStrategy {
 public:
  explicit Ring(const gradsweep::sdk::PluginContext& c) : RingStrategy(c, {}, "ring") {}
};
}  // namespace

GRADSWEEP_STRATEGY_PLUGIN("ring", "1.0.0", "ring allreduce of fused gradient buckets, overlapped with backward",
                          Ring, gradsweep::strategies::kRingOptions)
