#include "train/checkpoint.hpp"

#include "plugins/plugin_declarations.hpp"
#include "plugins/rank_duties.hpp"
#include "train/checkpoint_files.hpp"
#include "train/checkpoint_steps.hpp"
#include "util/atomic_file.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

namespace gradsweep::train {
namespace fs = std::filesystem;

namespace {

torch::Tensor cpu_rng_state() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_cpu_rng_state(const torch::Tensor& state) {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

// Rank 0's `values` on every rank (checkpoint bookkeeping only: not counted as traffic).
std::vector<std::int64_t> from_rank_zero(comm::HostCommunicator& comm, std::vector<std::int64_t> values) {
  torch::Tensor all = torch::tensor(values, torch::kLong);
  if (comm.size() > 1) {
    if (comm.rank() != 0) all.zero_();
    sdk::check(comm.allreduce(all, sdk::ReduceOp::Sum));
    comm.take_stats();
  }
  return {all.data_ptr<std::int64_t>(), all.data_ptr<std::int64_t>() + all.numel()};
}

// A strategy that hears unit events may keep parameters sharded at rest (fsdp): it makes them whole while
// the host reads or restores them. Others never free them.
void hold_parameters(plugins::StrategyInstance& strategy, bool hold) {
  if (plugins::hears_unit_events(strategy)) strategy.call<&sdk::StrategyAbi::hold_parameters>(hold);
}

// What a checkpoint holds of the model: its parameters and its buffers.
std::pair<std::vector<sdk::Parameter>, std::vector<sdk::NamedTensor>> model_tensors(plugins::ModelInstance& model) {
  std::pair<std::vector<sdk::Parameter>, std::vector<sdk::NamedTensor>> tensors;
  model.call<&sdk::ModelAbi::parameters>(&tensors.first);
  model.call<&sdk::ModelAbi::buffers>(&tensors.second);
  return tensors;
}

// The checkpoint's files, written into `staged`.
void write_checkpoint_files(const fs::path& staged, const CheckpointStep& step, plugins::ModelInstance& model,
                            plugins::StrategyInstance& strategy) {
  const auto [params, buffers] = model_tensors(model);
  torch::serialize::OutputArchive model_archive;
  hold_parameters(strategy, true);
  for (const auto& p : params) model_archive.write("param/" + p.name, p.tensor.detach().cpu().clone());
  hold_parameters(strategy, false);
  for (const auto& b : buffers) model_archive.write("buffer/" + b.name, b.tensor.detach().cpu());
  model_archive.write("rng/cpu", cpu_rng_state());
  write_archive(model_archive, staged / "model.pt");

  torch::serialize::OutputArchive strategy_archive;
  strategy.call<&sdk::StrategyAbi::save_state>(strategy_archive);
  write_archive(strategy_archive, staged / "strategy.pt");
  // Written last: its presence marks the checkpoint complete (saved_steps).
  write_step(staged, step);
}

// The old ranks' strategy.pt files, opened when the strategy asks for them.
class SavedRankStates final : public sdk::SavedStates {
 public:
  SavedRankStates(fs::path dir, const CheckpointStep& step) : dir_(std::move(dir)), step_(step) {}
  int world_size() const noexcept override { return step_.world_size; }
  sdk::Status open(int rank, torch::serialize::InputArchive** out) noexcept override {
    return sdk::guard([&] {
      if (rank < 0 || rank >= step_.world_size)
        throw sdk::Error("no old rank " + std::to_string(rank) + ": the checkpoint was written by " +
                         std::to_string(step_.world_size) + " ranks");
      auto& archive = archives_[rank];
      if (!archive) {
        auto fresh = std::make_unique<torch::serialize::InputArchive>();
        read_archive(*fresh, step_dir(dir_, rank, step_.step) / "strategy.pt");
        archive = std::move(fresh);
      }
      *out = archive.get();
    });
  }

 private:
  fs::path dir_;
  CheckpointStep step_;
  std::map<int, std::unique_ptr<torch::serialize::InputArchive>> archives_;
};

// Why this job cannot take over `found`; "" when it can.
std::string misfit(const fs::path& dir, const CheckpointStep& found, const comm::HostCommunicator& comm,
                   const plugins::StrategyInstance& strategy) {
  const std::string what = "checkpoint " + dir.string() + " (step " + std::to_string(found.step) + ")";
  const std::string& name = strategy.record().name;
  if (!found.strategy.empty() && found.strategy != name)
    return what + " was written by strategy '" + found.strategy + "', but this job runs '" + name +
           "'; delete the directory or resume it with '" + found.strategy + "'";
  if (found.world_size == comm.size()) return "";
  const auto caps = plugins::declared_capabilities(strategy.record());
  if (!caps || !caps->reshards || !strategy.has<&sdk::StrategyAbi::load_resharded>())
    return what + " was written by " + std::to_string(found.world_size) + " ranks, but this job has " +
           std::to_string(comm.size()) + " and strategy '" + name +
           "' cannot resume at another world size (it does not declare `reshards`); run it on " +
           std::to_string(found.world_size) + " ranks or delete the directory";
  return "";
}

// Restores parameters, buffers and the random generator from `source` (model.pt of old rank 0 when
// resharding) and `rng_source`.
void restore_model(const fs::path& source, const fs::path& rng_source, plugins::ModelInstance& model,
                   plugins::StrategyInstance& strategy) {
  const auto [params, buffers] = model_tensors(model);
  torch::serialize::InputArchive model_archive;
  read_archive(model_archive, source / "model.pt");
  // Every shape first: a checkpoint of another model must change nothing.
  std::vector<std::pair<torch::Tensor, torch::Tensor>> restores;
  auto take = [&](const std::string& key, const torch::Tensor& into) {
    torch::Tensor saved;
    if (!model_archive.try_read(key, saved))
      throw std::runtime_error(source.string() + ": checkpoint has no '" + key +
                               "': it was written by a different model configuration");
    if (saved.sizes() != into.sizes())
      throw std::runtime_error(source.string() + ": '" + key + "' has shape " + c10::str(saved.sizes()) +
                               " in the checkpoint but " + c10::str(into.sizes()) + " in the model");
    restores.emplace_back(into, saved);
  };
  for (const auto& p : params) take("param/" + p.name, p.tensor);
  const std::size_t param_count = restores.size();
  for (const auto& b : buffers) take("buffer/" + b.name, b.tensor);
  torch::serialize::InputArchive rng_archive;
  if (rng_source != source) read_archive(rng_archive, rng_source / "model.pt");
  torch::Tensor rng;
  (rng_source != source ? rng_archive : model_archive).read("rng/cpu", rng);

  torch::NoGradGuard no_grad;
  hold_parameters(strategy, true);
  for (std::size_t i = 0; i < param_count; ++i) restores[i].first.copy_(restores[i].second);
  hold_parameters(strategy, false);
  for (std::size_t i = param_count; i < restores.size(); ++i) restores[i].first.copy_(restores[i].second);
  set_cpu_rng_state(rng);
}

// Rank 0 finds the step; every rank learns it, or that rank 0 failed (its error is its own to report).
std::optional<CheckpointStep> agree_on_step(const fs::path& dir, comm::HostCommunicator& comm) {
  std::optional<CheckpointStep> found;
  std::string failure;
  if (comm.rank() == 0) try {
      found = newest_resumable(dir, comm.size());
    } catch (const std::exception& e) {
      failure = e.what();
    }
  const auto agreed = from_rank_zero(
      comm, {failure.empty() ? 0 : 1, found ? 1 : 0, found ? found->step : 0, found ? found->world_size : 0});
  if (!failure.empty()) throw std::runtime_error(failure);
  if (agreed[0] != 0) throw std::runtime_error(dir.string() + ": rank 0 could not choose a checkpoint (see its log)");
  if (agreed[1] == 0) return std::nullopt;
  if (comm.rank() == 0) return found;
  // Every rank reads the step's state itself: a directory it cannot see is an error here, not later.
  auto mine = read_step(dir, 0, agreed[2], comm.size());
  if (!mine || mine->world_size != agreed[3])
    throw std::runtime_error("rank " + std::to_string(comm.rank()) + " cannot see checkpoint " +
                             step_dir(dir, 0, agreed[2]).string() +
                             " that rank 0 resumes from: the checkpoint directory must be shared by all ranks");
  return mine;
}

}  // namespace

void save_checkpoint(const fs::path& dir, comm::HostCommunicator& comm, std::int64_t next_step,
                     plugins::ModelInstance& model, plugins::StrategyInstance& strategy) {
  const int rank = comm.rank();
  const fs::path target = step_dir(dir, rank, next_step);
  const fs::path staged = target.string() + ".staging";
  const std::string what = "checkpoint " + target.filename().string() + " in " + rank_dir(dir, rank).string();
  try {
    fs::remove_all(staged);
    fs::create_directories(staged);
    write_checkpoint_files(staged, {next_step, comm.size(), strategy.record().name}, model, strategy);
    util::replace_directory(staged, target);
  } catch (const std::exception& e) {
    // A full disk is the usual cause: free what the half-written checkpoint holds and say so plainly.
    std::error_code ignored;
    fs::remove_all(staged, ignored);
    int error = 0;
    if (const auto* w = dynamic_cast<const WriteFailure*>(&e)) error = w->error;
    if (const auto* s = dynamic_cast<const std::system_error*>(&e)) error = s->code().value();
    if (error == ENOSPC || error == EDQUOT) {
      const std::string space = free_space(dir);
      throw std::runtime_error("no space left writing " + what + " (" + e.what() + (space.empty() ? "" : "; ") + space +
                               ")");
    }
    throw std::runtime_error("cannot write " + what + ": " + e.what());
  }
  // Keep this one and the one before: another rank may not have finished saving this step.
  const auto steps = saved_steps(dir, rank);
  for (std::size_t i = 2; i < steps.size(); ++i) fs::remove_all(step_dir(dir, rank, steps[i]));
  // Once every rank has this step, a larger world's leftover rank directories are no longer needed.
  from_rank_zero(comm, {0});
  if (rank == 0) remove_stale_ranks(dir, comm.size());
}

std::optional<Resumed> load_checkpoint(const fs::path& dir, comm::HostCommunicator& comm, plugins::ModelInstance& model,
                                       plugins::StrategyInstance& strategy) {
  const std::optional<CheckpointStep> found = agree_on_step(dir, comm);
  if (!found) return std::nullopt;
  if (const std::string why = misfit(dir, *found, comm, strategy); !why.empty()) throw std::runtime_error(why);
  const int rank = comm.rank();
  if (found->world_size == comm.size()) {
    const fs::path source = step_dir(dir, rank, found->step);
    restore_model(source, source, model, strategy);
    torch::serialize::InputArchive strategy_archive;
    read_archive(strategy_archive, source / "strategy.pt");
    strategy.call<&sdk::StrategyAbi::load_state>(strategy_archive);
  } else {
    restore_model(step_dir(dir, 0, found->step), step_dir(dir, rank % found->world_size, found->step), model, strategy);
    SavedRankStates saved(dir, *found);
    strategy.call<&sdk::StrategyAbi::load_resharded>(saved);
  }
  return Resumed{found->step, found->world_size};
}

}  // namespace gradsweep::train
