#pragma once
// Checkpoints of one rank: model parameters and buffers, the strategy's state (optimizer, server or
// shard), the random generator, and the next step. The data position is a function of the step (see
// data/batch_loader.hpp), so the step is all the data loader needs. A resumed run therefore continues
// bit for bit where the interrupted one stopped.
//
// Each rank saves on its own, so a job killed while saving (scancel, requeue, Ctrl-C) can leave rank 0
// with step N and rank 1 still at step N - k. Every rank therefore keeps its two newest checkpoints, as
// <dir>/rank-<r>/step-<N>/, and a job resumes from the newest step every rank that wrote it holds
// (checkpoint_steps.hpp).
//
// A job of another world size resumes too, when its strategy declares `reshards`: every rank takes the
// model from old rank 0 and its random generator from old rank r mod N, and the strategy takes over the
// old ranks' states (Strategy::load_reshard). Every rank then reads other ranks' files: the directory
// must be shared, as a cell's directory is (docs/howto/resume-at-another-size.md).
#include "comm/core/host_communicator.hpp"
#include "plugins/plugin_instance.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>

namespace gradsweep::train {

// Writes <dir>/rank-<r>/step-<next_step>/ atomically (a staged directory renamed into place), then
// removes this rank's checkpoints older than the previous one. A failed write (a full disk, above all)
// removes the staged directory and throws "no space left writing checkpoint step-N in DIR (...)", or
// "cannot write checkpoint step-N in DIR: ..." for other errors. Collective: when every rank has saved,
// rank 0 removes what a job of a larger world size left (rank-<r> for r >= this job's size).
void save_checkpoint(const std::filesystem::path& dir, comm::HostCommunicator& comm, std::int64_t next_step,
                     plugins::ModelInstance& model, plugins::StrategyInstance& strategy);

// What a job resumed from.
struct Resumed {
  std::int64_t step = 0;  // the next step to run
  int world_size = 0;     // of the job that saved it: another than this job's when resharded
};

// Collective: every rank calls it. Restores the newest resumable step and returns it; nullopt (start from
// scratch) when the directory holds no checkpoint. Throws, before anything is changed, when the
// checkpoint does not fit: no step complete on every rank, another strategy, another world size for a
// strategy that cannot reshard, another model shape, a missing or truncated file (each named).
std::optional<Resumed> load_checkpoint(const std::filesystem::path& dir, comm::HostCommunicator& comm,
                                       plugins::ModelInstance& model, plugins::StrategyInstance& strategy);

}  // namespace gradsweep::train
