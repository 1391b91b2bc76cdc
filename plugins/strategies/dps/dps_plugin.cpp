// `dps`: the sharded parameter server (ZeRO-1) in float32.
#include "dps_strategy.hpp"

#include <gradsweep/sdk/plugin.hpp>

namespace {
class Dps final : public gradsweep::strategies::DpsStrategy {
 public:
  explicit Dps(const gradsweep::sdk::PluginContext& c) : DpsStrategy(c, {}, "dps") {}
};
}  // namespace

GRADSWEEP_STRATEGY_PLUGIN("dps", "1.0.0",
                          "distributed parameter server: each rank updates 1/N of the parameters (ZeRO-1)", Dps,
                          gradsweep::strategies::kDpsOptions)
