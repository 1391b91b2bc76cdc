#pragma once
// The plain and -amp plugins of one strategy class differ only in precision: the plain one runs in
// float32, the -amp one reads the shared mixed-precision options. Both plugins are built from the same
// class, so the two can never drift apart.
#include "mixed_precision.hpp"

#include <gradsweep/sdk/services.hpp>
#include <gradsweep/sdk/status.hpp>

#include <string>

namespace gradsweep::strategies {

template <class Strategy, const char* Name>
class Float32Variant final : public Strategy {
 public:
  explicit Float32Variant(const sdk::PluginContext& c) : Strategy(c, MixedPrecision(), Name) {}
};

template <class Strategy, const char* Name>
class MixedPrecisionVariant final : public Strategy {
 public:
  explicit MixedPrecisionVariant(const sdk::PluginContext& c)
      : Strategy(c, MixedPrecision(c.options, c.device, Name), Name) {}
};

// The `algorithm` option of strategies that can run on gradsweep's ring, its hierarchical allreduce
// (intra-node reduce-scatter, inter-node allreduce, intra-node all-gather; reduce_scatter and allgather
// stay the ring) or on the backend's collectives.
inline sdk::Algorithm algorithm_option(const sdk::Options& options, const std::string& strategy) {
  const std::string& name = options.text("algorithm");
  if (name == "ring") return sdk::Algorithm::Ring;
  if (name == "native") return sdk::Algorithm::Native;
  if (name == "hierarchical") return sdk::Algorithm::Hierarchical;
  throw sdk::Error("strategy '" + strategy + "': algorithm '" + name + "' is not one of ring, native, hierarchical");
}

}  // namespace gradsweep::strategies
