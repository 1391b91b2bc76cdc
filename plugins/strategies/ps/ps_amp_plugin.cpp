// `ps-amp`: `ps` with the shared mixed precision (common/mixed_precision.hpp).
#include "ps_strategy.hpp"
#include "option_list.hpp"
#include "strategy_variants.hpp"

#include <gradsweep/sdk/plugin.hpp>

namespace gradsweep::strategies {
inline constexpr char kPsStrategyAmpName[] = "ps-amp";
using AmpPlugin = MixedPrecisionVariant<PsStrategy, kPsStrategyAmpName>;
inline constexpr auto kPsStrategyAmpOptions = join(kPsOptions, kMixedPrecisionOptions);
}  // namespace gradsweep::strategies

GRADSWEEP_STRATEGY_PLUGIN("ps-amp", "1.0.0", "ps with mixed precision: autocast, 16-bit pushes, loss scaling",
                          gradsweep::strategies::AmpPlugin, gradsweep::strategies::kPsStrategyAmpOptions)
