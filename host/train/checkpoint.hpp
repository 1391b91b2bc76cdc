#pragma once
// Checkpoints of one rank: model parameters and buffers, the strategy's state (optimizer, server or
// shard), the random generator, and the next step. The data position is a function of the step (see
// data/batch_loader.hpp), so the step is all the data loader needs. A resumed run therefore continues
// bit for bit where the interrupted one stopped.
//
// Each rank saves on its own, so a job killed while saving (scancel, requeue, Ctrl-C) can leave rank 0
// with step N and rank 1 still at step N - k. Every rank therefore keeps its two newest checkpoints, as
// <dir>/rank-<r>/step-<N>/, and on resume the ranks agree on the newest step they all hold.
#include "comm/host_communicator.hpp"
#include "plugins/plugin_instance.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>

namespace gradsweep::host {

// Writes <dir>/rank-<r>/step-<next_step>/ atomically (a staged directory renamed into place), then
// removes this rank's checkpoints older than the previous one. A failed write (a full disk, above all)
// removes the staged directory and throws "no space left writing checkpoint step-N in DIR (...)", or
// "cannot write checkpoint step-N in DIR: ..." for other errors.
void save_checkpoint(const std::filesystem::path& dir, int rank, std::int64_t next_step, ModelInstance& model,
                     StrategyInstance& strategy);

// Collective: every rank calls it. Restores the newest step that every rank has a checkpoint of and
// returns it; nullopt (start from scratch) when some rank has none. Throws, naming the ranks' steps, when
// the ranks hold no step in common (more than one save apart).
std::optional<std::int64_t> load_checkpoint(const std::filesystem::path& dir, HostCommunicator& comm,
                                            ModelInstance& model, StrategyInstance& strategy);

}  // namespace gradsweep::host
