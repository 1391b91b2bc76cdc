#include "train/checkpoint_steps.hpp"

#include "train/checkpoint_files.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <stdexcept>
#include <vector>

namespace gradsweep::train {
namespace fs = std::filesystem;

namespace {

// The ranks with a directory here, ascending.
std::vector<int> ranks_present(const fs::path& dir) {
  std::vector<int> ranks;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("rank-", 0) != 0) continue;
    try {
      std::size_t used = 0;
      const int r = std::stoi(name.substr(5), &used);
      if (used == name.size() - 5 && r >= 0) ranks.push_back(r);
    } catch (const std::exception&) {  // a stray name: not ours
    }
  }
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

// Whether every rank of the world that wrote rank 0's `step` holds it, written by that same world.
std::optional<CheckpointStep> complete_step(const fs::path& dir, std::int64_t step, int legacy_world) {
  const std::optional<CheckpointStep> first = read_step(dir, 0, step, legacy_world);
  if (!first) return std::nullopt;
  for (int r = 1; r < first->world_size; ++r) {
    const std::optional<CheckpointStep> other = read_step(dir, r, step, legacy_world);
    if (!other || other->world_size != first->world_size) return std::nullopt;
  }
  return first;
}

}  // namespace

fs::path rank_dir(const fs::path& dir, int rank) { return dir / ("rank-" + std::to_string(rank)); }
fs::path step_dir(const fs::path& dir, int rank, std::int64_t step) {
  return rank_dir(dir, rank) / ("step-" + std::to_string(step));
}

std::optional<CheckpointStep> read_step(const fs::path& dir, int rank, std::int64_t step, int legacy_world) {
  const fs::path file = step_dir(dir, rank, step) / "state.json";
  std::ifstream in(file);
  if (!in) return std::nullopt;
  const nlohmann::json state = nlohmann::json::parse(in, nullptr, false);
  if (!state.is_object() || !state.contains("next_step"))
    throw std::runtime_error("checkpoint file " + file.string() + " is not a checkpoint's state (truncated?)");
  return CheckpointStep{state["next_step"].get<std::int64_t>(), state.value("world_size", legacy_world),
                        state.value("strategy", std::string())};
}

void write_step(const fs::path& staged, const CheckpointStep& step) {
  write_text(
      staged / "state.json",
      nlohmann::json{{"next_step", step.step}, {"world_size", step.world_size}, {"strategy", step.strategy}}.dump());
}

std::vector<std::int64_t> saved_steps(const fs::path& dir, int rank) {
  std::vector<std::int64_t> steps;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(rank_dir(dir, rank), ec)) {
    const std::string name = entry.path().filename().string();
    // step-<N> only: a step-<N>.staging left by a kill mid-save is not a checkpoint.
    if (name.rfind("step-", 0) != 0 || name.find('.') != std::string::npos || !fs::exists(entry.path() / "state.json"))
      continue;
    try {
      steps.push_back(std::stoll(name.substr(5)));
    } catch (const std::exception&) {  // a stray name: not ours
    }
  }
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

std::optional<CheckpointStep> newest_resumable(const fs::path& dir, int legacy_world) {
  std::map<int, std::vector<std::int64_t>> held;  // rank -> its steps, newest first
  for (const int r : ranks_present(dir))
    if (auto steps = saved_steps(dir, r); !steps.empty()) held.emplace(r, std::move(steps));
  if (held.empty()) return std::nullopt;
  if (held.count(0) != 0)
    for (const std::int64_t step : held.at(0))
      if (auto found = complete_step(dir, step, legacy_world)) return found;
  std::string newest;
  for (const auto& [r, steps] : held)
    newest += (newest.empty() ? "" : ", ") + ("rank " + std::to_string(r) + ": step " + std::to_string(steps.front()));
  throw std::runtime_error(dir.string() + ": the ranks' checkpoints have no step in common (newest per rank: " +
                           newest + "); delete the directory to start the cell again");
}

void remove_stale_ranks(const fs::path& dir, int world_size) {
  std::optional<CheckpointStep> newest;
  try {
    newest = newest_resumable(dir, world_size);
  } catch (const std::exception&) {  // nothing resumable yet: everything may still be needed
    return;
  }
  if (!newest || newest->world_size != world_size) return;
  for (const int r : ranks_present(dir))
    if (r >= world_size) fs::remove_all(rank_dir(dir, r));
}

}  // namespace gradsweep::train
