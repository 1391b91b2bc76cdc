#pragma once
// "bad options": every option the strategy declares, given a value of the wrong type and, where it
// declares choices, a value outside them, must be refused by `gradsweep train` before anything trains
// (non-zero exit, no metrics.jsonl), in a message that names the key (strategy.KEY). The host checks
// types and choices from the declarations (config/option_schema); a plugin whose declarations are wrong
// (a choice list its default is not in, a type that does not match what it reads) fails here.
#include "conformance/kit_plan.hpp"
#include "conformance/kit_report.hpp"

#include <vector>

namespace gradsweep::conformance {

// One finding for all options (ranks 0): how many bad values were refused, and the first that was not.
Finding check_bad_options(const KitContext& ctx);

}  // namespace gradsweep::conformance
