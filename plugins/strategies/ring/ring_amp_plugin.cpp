// `ring-amp`: `ring` with autocast, 16-bit gradients on the wire and dynamic loss scaling.
#include "option_list.hpp"
#include "ring_strategy.hpp"

#include <gradsweep/sdk/plugin.hpp>

namespace {
using namespace gradsweep::strategies;

class RingAmp final : public RingStrategy {
 public:
  explicit RingAmp(const gradsweep::sdk::PluginContext& c)
      : RingStrategy(c, MixedPrecision(c.options, c.device, "ring-amp"), "ring-amp") {}
};

constexpr auto kOptions = join(kRingOptions, kMixedPrecisionOptions);
}  // namespace

GRADSWEEP_STRATEGY_PLUGIN("ring-amp", "1.0.0", "ring with mixed precision: autocast, 16-bit gradients, loss scaling",
                          RingAmp, kOptions)
