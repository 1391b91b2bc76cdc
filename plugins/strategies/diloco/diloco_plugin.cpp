// `diloco` in float32.
#include "diloco_strategy.hpp"

#include <gradsweep/sdk/plugin.hpp>

GRADSWEEP_STRATEGY_PLUGIN("diloco", "1.0.0",
                          "DiLoCo: H local steps of the inner optimizer, then the averaged parameter change "
                          "applied by an outer Nesterov SGD (one parameter allreduce per H steps)",
                          gradsweep::strategies::DilocoStrategy, gradsweep::strategies::kDilocoOptions)
