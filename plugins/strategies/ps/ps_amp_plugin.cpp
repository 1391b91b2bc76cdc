// `ps-amp`: `ps` with autocast, 16-bit gradient pushes and dynamic loss scaling.
#include "option_list.hpp"
#include "ps_strategy.hpp"

#include <gradsweep/sdk/plugin.hpp>

namespace {
using namespace gradsweep::strategies;

class PsAmp final : public PsStrategy {
 public:
  explicit PsAmp(const gradsweep::sdk::PluginContext& c)
      : PsStrategy(c, MixedPrecision(c.options, c.device, "ps-amp"), "ps-amp") {}
};

constexpr auto kOptions = join(kPsOptions, kMixedPrecisionOptions);
}  // namespace

GRADSWEEP_STRATEGY_PLUGIN("ps-amp", "1.0.0", "ps with mixed precision: autocast, 16-bit pushes, loss scaling", PsAmp,
                          kOptions)
