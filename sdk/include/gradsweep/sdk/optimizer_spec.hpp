#pragma once
// The optimizer a cell asked for (train.optimizer, lr, betas, ...), as the host hands it to a strategy in
// StrategySetup. Part of the SDK's core, which needs no LibTorch: the host's configuration fills it without
// LibTorch (host/config/cell_keys.cpp holds the keys' defaults; the values below only serve a plugin's tests).
#include <cstdint>

namespace gradsweep::sdk {

// The optimizer the experiment asked for. Strategies build it over whichever parameters they update
// (all of them, a server's copy, or a shard) with `make_optimizer` from <gradsweep/sdk/optimizer.hpp>.
struct OptimizerSpec {
  enum class Kind : std::uint32_t { AdamW = 0, SGD = 1 };
  Kind kind = Kind::AdamW;
  double lr = 1e-3;  // peak rate; the trainer passes each step's scheduled rate in StepContext
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.0;  // applied to matrices only (dim >= 2), as in GPT-2 and llm.c
  double momentum = 0.0;      // SGD
  double grad_clip = 0.0;     // max global gradient norm; 0 = no clipping
};

}  // namespace gradsweep::sdk
