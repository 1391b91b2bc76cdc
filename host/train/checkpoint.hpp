#pragma once
// Checkpoints of one rank: model parameters and buffers, the strategy's state (optimizer, server or
// shard), the random generator, and the next step. The data position is a function of the step (see
// data/batch_loader.hpp), so the step is all the data loader needs. A resumed run therefore continues
// bit for bit where the interrupted one stopped.
#include "plugins/plugin_instance.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>

namespace gradsweep::host {

// Writes <dir>/rank-<r>/ atomically (a staged directory renamed into place).
void save_checkpoint(const std::filesystem::path& dir, int rank, std::int64_t next_step, ModelInstance& model,
                     StrategyInstance& strategy);

// Restores from <dir>/rank-<r>/ if present; returns the step to continue from.
std::optional<std::int64_t> load_checkpoint(const std::filesystem::path& dir, int rank, ModelInstance& model,
                                            StrategyInstance& strategy);

}  // namespace gradsweep::host
