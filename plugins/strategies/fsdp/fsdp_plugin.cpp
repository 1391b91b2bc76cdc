// `fsdp` in float32.
#include "fsdp_strategy.hpp"

#include <gradsweep/sdk/plugin.hpp>

GRADSWEEP_STRATEGY_PLUGIN("fsdp", "1.0.0",
                          "fully sharded data parallel (ZeRO-3): each model unit gathered for its forward and backward",
                          gradsweep::strategies::FsdpStrategy, gradsweep::strategies::kFsdpOptions)
