// `powersgd` in float32 (no -amp variant: P and Q are orthogonalised and multiplied in float32).
#include "powersgd_strategy.hpp"

#include <gradsweep/sdk/plugin.hpp>

GRADSWEEP_STRATEGY_PLUGIN("powersgd", "1.0.0",
                          "PowerSGD: rank-r P Q^T gradients with error feedback and warm start (Vogels et al. 2019)",
                          gradsweep::strategies::PowerSgdStrategy, gradsweep::strategies::kPowerSgdOptions)
