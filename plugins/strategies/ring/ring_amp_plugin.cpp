// `ring-amp`: `ring` with the shared mixed precision (common/mixed_precision.hpp).
#include "ring_strategy.hpp"
#include "option_list.hpp"
#include "strategy_variants.hpp"

#include <gradsweep/sdk/plugin.hpp>

namespace gradsweep::strategies {
inline constexpr char kRingStrategyAmpName[] = "ring-amp";
using AmpPlugin = MixedPrecisionVariant<RingStrategy, kRingStrategyAmpName>;
inline constexpr auto kRingStrategyAmpOptions = join(kRingOptions, kMixedPrecisionOptions);
}  // namespace gradsweep::strategies

GRADSWEEP_STRATEGY_PLUGIN("ring-amp", "1.0.0", "ring with mixed precision: autocast, 16-bit gradients, loss scaling",
                          gradsweep::strategies::AmpPlugin, gradsweep::strategies::kRingStrategyAmpOptions)
