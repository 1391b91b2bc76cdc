#pragma once
// The plain and -amp plugins of one strategy class differ only in precision: the plain one runs in
// float32, the -amp one reads the shared mixed-precision options. Both plugins are built from the same
// class, so the two can never drift apart.
#include "algorithm_option.hpp"
#include "mixed_precision.hpp"

#include <gradsweep/sdk/capabilities.hpp>
#include <gradsweep/sdk/services.hpp>
#include <gradsweep/sdk/status.hpp>

#include <string>

namespace gradsweep::strategies {

// Both take the class's capabilities and plan check (Strategy::check_plan(facts, answer, name)); in 16 bit
// a strategy no longer reproduces `single` bit for bit.
template <class Strategy, const char* Name>
class Float32Variant final : public Strategy {
 public:
  static constexpr sdk::StrategyCapabilities kCapabilities = Strategy::kCapabilities;
  static void check_plan(const sdk::PlanFacts& facts, sdk::PlanAnswer& answer) {
    Strategy::check_plan(facts, answer, Name);
  }

  explicit Float32Variant(const sdk::PluginContext& c) : Strategy(c, MixedPrecision(), Name) {}
};

template <class Strategy, const char* Name>
class MixedPrecisionVariant final : public Strategy {
 public:
  static constexpr sdk::StrategyCapabilities kCapabilities = Strategy::kCapabilities.exact(false);
  static void check_plan(const sdk::PlanFacts& facts, sdk::PlanAnswer& answer) {
    Strategy::check_plan(facts, answer, Name);
  }

  explicit MixedPrecisionVariant(const sdk::PluginContext& c) : Strategy(c, MixedPrecision(c.options, Name), Name) {}
};

}  // namespace gradsweep::strategies
