// `hsdp` in float32.
#include "hsdp_strategy.hpp"

#include <gradsweep/sdk/plugin.hpp>

GRADSWEEP_STRATEGY_PLUGIN("hsdp", "1.0.0",
                          "hybrid sharded data parallel: fsdp inside each node, the shards replicated across nodes",
                          gradsweep::strategies::HsdpStrategy, gradsweep::strategies::kHsdpOptions)
