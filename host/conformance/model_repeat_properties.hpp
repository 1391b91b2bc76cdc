#pragma once
// The model checks that build the model more than once or split its batch (docs/plugins.md, "Checking
// your model"): what makes runs reproducible, resumable, and the same for every split of the global batch.
#include "conformance/kit_report.hpp"
#include "conformance/model_bench.hpp"

namespace gradsweep::conformance {

// `deterministic`: two instances built after the same seed hold the same parameters and buffers, bit for
// bit, and give the same training and evaluation loss on the same batch.
Finding check_model_deterministic(const ModelCheckContext& ctx);

// `dropout split`: in training, the gradient of the whole batch equals the mean of its two halves'
// gradients, each half keyed with its own sample_ids and the same step and seed (sample_dropout.hpp).
// Not applicable when training and evaluation give the same loss (no dropout with these options).
Finding check_model_dropout_split(const ModelCheckContext& ctx);

// `save/load`: parameters and buffers written as the trainer's checkpoint writes them and read into an
// instance built with another seed: the same parameters and buffers, and the same losses, bit for bit.
Finding check_model_save_load(const ModelCheckContext& ctx);

}  // namespace gradsweep::conformance
