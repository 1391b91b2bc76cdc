// `ps`: a single parameter server, synchronous or asynchronous, in float32.
#include "ps_strategy.hpp"

#include <gradsweep/sdk/plugin.hpp>

namespace {
class Ps final : public gradsweep::strategies::PsStrategy {
 public:
  explicit Ps(const gradsweep::sdk::PluginContext& c) : PsStrategy(c, {}, "ps") {}
};
}  // namespace

GRADSWEEP_STRATEGY_PLUGIN("ps", "1.0.0", "single parameter server on rank 0: workers push gradients, pull parameters",
                          Ps, gradsweep::strategies::kPsOptions)
