// `ring` in float32.
#include "ring_strategy.hpp"
#include "strategy_variants.hpp"

#include <gradsweep/sdk/plugin.hpp>

namespace gradsweep::strategies {
inline constexpr char kRingStrategyName[] = "ring";
using Plugin = Float32Variant<RingStrategy, kRingStrategyName>;
}  // namespace gradsweep::strategies

GRADSWEEP_STRATEGY_PLUGIN("ring", "1.0.0", "ring allreduce of fused gradient buckets, overlapped with backward",
                          gradsweep::strategies::Plugin, gradsweep::strategies::kRingOptions)
