// `topk` in float32 (no -amp variant: the accumulation and velocity must keep small gradients that 16 bits
// would round away).
#include "topk_strategy.hpp"

#include <gradsweep/sdk/plugin.hpp>

GRADSWEEP_STRATEGY_PLUGIN("topk", "1.0.0",
                          "Deep Gradient Compression: top k% per tensor with momentum correction and error feedback",
                          gradsweep::strategies::TopkStrategy, gradsweep::strategies::kTopkOptions)
