#pragma once
// The model checks of what a model declares about itself (docs/plugins.md, "Checking your model"): its
// parameters and their count, its units, its FLOPs per token and its loss, each against what the host
// does with it.
#include "conformance/kit_report.hpp"
#include "conformance/model_bench.hpp"

namespace gradsweep::conformance {

// `parameters`: at least one; names non-empty and unique (checkpoint keys); each a distinct floating
// tensor that requires a gradient; row_sparse only on matrices with a row per vocabulary id.
Finding check_model_parameters(const ModelCheckContext& ctx);

// `parameter count`: ModelInfo::num_parameters is the sum of the parameters' numel.
Finding check_model_parameter_count(const ModelCheckContext& ctx);

// `units` (SDK 1.4): each parameter in one unit at most (the rest form the root); in a forward with hooks
// set, begin(u) and end(u, x) once per unit, in the declared order, and each unit's output reaching every
// parameter of the unit (the host starts the unit's backward when that output's gradient is computed).
Finding check_model_units(const ModelCheckContext& ctx);

// `flops per token`: positive and finite at the check's sequence length.
Finding check_model_flops(const ModelCheckContext& ctx);

// `initial loss`: a finite scalar within a factor of 2 of ln(vocab_size) at initialisation (evaluation).
Finding check_model_initial_loss(const ModelCheckContext& ctx);

// `output subset`: where ModelInfo::supports_output_subset, an OutputSubset of every vocabulary row gives
// the full loss; not applicable otherwise.
Finding check_model_output_subset(const ModelCheckContext& ctx);

}  // namespace gradsweep::conformance
