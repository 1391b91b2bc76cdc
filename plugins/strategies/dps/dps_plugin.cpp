// `dps` in float32.
#include "dps_strategy.hpp"
#include "strategy_variants.hpp"

#include <gradsweep/sdk/plugin.hpp>

namespace gradsweep::strategies {
inline constexpr char kDpsStrategyName[] = "dps";
using Plugin = Float32Variant<DpsStrategy, kDpsStrategyName>;
}  // namespace gradsweep::strategies

GRADSWEEP_STRATEGY_PLUGIN("dps", "1.0.0",
                          "distributed parameter server: each rank updates 1/N of the parameters (ZeRO-1)",
                          gradsweep::strategies::Plugin, gradsweep::strategies::kDpsOptions)
