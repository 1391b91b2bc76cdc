// `zero2-amp`: `zero2` with the shared mixed precision (common/mixed_precision.hpp).
#include "option_list.hpp"
#include "strategy_variants.hpp"
#include "zero2_strategy.hpp"

#include <gradsweep/sdk/plugin.hpp>

namespace gradsweep::strategies {
inline constexpr char kZero2StrategyAmpName[] = "zero2-amp";
using AmpPlugin = MixedPrecisionVariant<Zero2Strategy, kZero2StrategyAmpName>;
inline constexpr auto kZero2StrategyAmpOptions = join(kZero2Options, kMixedPrecisionOptions);
}  // namespace gradsweep::strategies

GRADSWEEP_STRATEGY_PLUGIN("zero2-amp", "1.0.0", "zero2 with mixed precision: autocast, 16-bit gradients, loss scaling",
                          gradsweep::strategies::AmpPlugin, gradsweep::strategies::kZero2StrategyAmpOptions)
