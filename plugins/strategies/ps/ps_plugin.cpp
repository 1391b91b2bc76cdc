// `ps` in float32.
#include "ps_strategy.hpp"
#include "strategy_variants.hpp"

#include <gradsweep/sdk/plugin.hpp>

namespace gradsweep::strategies {
inline constexpr char kPsStrategyName[] = "ps";
using Plugin = Float32Variant<PsStrategy, kPsStrategyName>;
}  // namespace gradsweep::strategies

GRADSWEEP_STRATEGY_PLUGIN("ps", "1.0.0", "single parameter server on rank 0: workers push gradients, pull parameters",
                          gradsweep::strategies::Plugin, gradsweep::strategies::kPsOptions)
