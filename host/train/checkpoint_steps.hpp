#pragma once
// Where checkpoints lie and which one a job resumes from. Each rank writes <dir>/rank-<r>/step-<N>/ with
// a state.json (written last: its presence marks the step complete) that says which strategy and how many
// ranks wrote it. A step is resumable when every rank of the world that wrote it holds it complete, as
// written by that same world: a job resumed at another size writes over some rank directories and leaves
// others (rank-<r> for r >= its size) behind, until they are older than its own newest complete step.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gradsweep::train {

std::filesystem::path rank_dir(const std::filesystem::path& dir, int rank);
std::filesystem::path step_dir(const std::filesystem::path& dir, int rank, std::int64_t step);

// What state.json holds.
struct CheckpointStep {
  std::int64_t step = 0;  // the next step to run
  int world_size = 0;
  std::string strategy;
};

// state.json of rank `rank` at `step`; nullopt when that step is not complete there. A checkpoint written
// before state.json said its world size reads as `legacy_world` ranks.
std::optional<CheckpointStep> read_step(const std::filesystem::path& dir, int rank, std::int64_t step,
                                        int legacy_world);
void write_step(const std::filesystem::path& staged, const CheckpointStep& step);

// The steps `rank` holds complete, newest first.
std::vector<std::int64_t> saved_steps(const std::filesystem::path& dir, int rank);

// The newest resumable step; nullopt when the directory holds none at all. Throws, naming each rank's
// newest step, when it holds checkpoints but none complete on every rank that wrote it.
std::optional<CheckpointStep> newest_resumable(const std::filesystem::path& dir, int legacy_world);

// Removes rank-<r> directories for r >= world_size once a step of `world_size` ranks is the newest
// resumable: they then hold only older checkpoints of a larger world.
void remove_stale_ranks(const std::filesystem::path& dir, int world_size);

}  // namespace gradsweep::train
