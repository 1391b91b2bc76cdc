// `dps-amp`: `dps` with the shared mixed precision (common/mixed_precision.hpp).
#include "dps_strategy.hpp"
#include "option_list.hpp"
#include "strategy_variants.hpp"

#include <gradsweep/sdk/plugin.hpp>

namespace gradsweep::strategies {
inline constexpr char kDpsStrategyAmpName[] = "dps-amp";
using AmpPlugin = MixedPrecisionVariant<DpsStrategy, kDpsStrategyAmpName>;
inline constexpr auto kDpsStrategyAmpOptions = join(kDpsOptions, kMixedPrecisionOptions);
}  // namespace gradsweep::strategies

GRADSWEEP_STRATEGY_PLUGIN("dps-amp", "1.0.0", "dps with mixed precision: autocast, 16-bit gradients, loss scaling",
                          gradsweep::strategies::AmpPlugin, gradsweep::strategies::kDpsStrategyAmpOptions)
