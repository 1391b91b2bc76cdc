// `zero2` in float32.
#include "strategy_variants.hpp"
#include "zero2_strategy.hpp"

#include <gradsweep/sdk/plugin.hpp>

namespace gradsweep::strategies {
inline constexpr char kZero2StrategyName[] = "zero2";
using Plugin = Float32Variant<Zero2Strategy, kZero2StrategyName>;
}  // namespace gradsweep::strategies

GRADSWEEP_STRATEGY_PLUGIN("zero2", "1.0.0",
                          "ZeRO-2: sharded optimizer and gradients, buckets reduce-scattered during backward",
                          gradsweep::strategies::Plugin, gradsweep::strategies::kZero2Options)
