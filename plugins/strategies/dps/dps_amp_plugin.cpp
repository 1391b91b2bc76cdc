// `dps-amp`: `dps` with autocast, 16-bit gradients on the wire and dynamic loss scaling.
#include "dps_strategy.hpp"
#include "option_list.hpp"

#include <gradsweep/sdk/plugin.hpp>

namespace {
using namespace gradsweep::strategies;

class DpsAmp final : public DpsStrategy {
 public:
  explicit DpsAmp(const gradsweep::sdk::PluginContext& c)
      : DpsStrategy(c, MixedPrecision(c.options, c.device, "dps-amp"), "dps-amp") {}
};

constexpr auto kOptions = join(kDpsOptions, kMixedPrecisionOptions);
}  // namespace

GRADSWEEP_STRATEGY_PLUGIN("dps-amp", "1.0.0", "dps with mixed precision: autocast, 16-bit gradients, loss scaling",
                          DpsAmp, kOptions)
