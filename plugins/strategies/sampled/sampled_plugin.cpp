// `sampled`: sampled softmax with row-sparse gradient exchange (Xiao et al. 2017), float32.
#include "sampled_strategy.hpp"

#include <gradsweep/sdk/plugin.hpp>

GRADSWEEP_STRATEGY_PLUGIN("sampled", "1.0.0",
                          "sampled softmax; exchanges only the touched embedding/output rows (ring or ps)",
                          gradsweep::strategies::SampledStrategy, gradsweep::strategies::kSampledOptions)
