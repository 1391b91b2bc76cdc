#include "train/checkpoint.hpp"

#include "util/atomic_file.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <vector>

namespace gradsweep::host {
namespace fs = std::filesystem;

namespace {

fs::path rank_dir(const fs::path& dir, int rank) { return dir / ("rank-" + std::to_string(rank)); }
fs::path step_dir(const fs::path& dir, int rank, std::int64_t step) {
  return rank_dir(dir, rank) / ("step-" + std::to_string(step));
}

// The steps this rank holds a complete checkpoint of (state.json is written last), newest first.
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

// One value per rank, gathered on every rank (checkpoint bookkeeping only: not counted as traffic).
std::vector<std::int64_t> gather_from_ranks(HostCommunicator& comm, std::int64_t value) {
  torch::Tensor all = torch::zeros({comm.size()}, torch::kLong);
  all[comm.rank()] = value;
  if (comm.size() > 1) {
    sdk::check(comm.allreduce(all, sdk::ReduceOp::Sum));
    comm.take_stats();
  }
  return {all.data_ptr<std::int64_t>(), all.data_ptr<std::int64_t>() + all.numel()};
}

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

// A write that failed, with its errno: the caller turns it into one message naming the checkpoint.
struct WriteFailure : std::runtime_error {
  int error;
  WriteFailure(const fs::path& file, int e)
      : std::runtime_error(file.filename().string() + ": " + std::strerror(e)), error(e) {}
};

// Writes all of [data, data + size) to `fd`; returns 0 or the errno of the failure.
int write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : ENOSPC;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return 0;
}

// Creates `file`, lets `fill` write into it (returning 0 or an errno), fsyncs and closes it; throws
// WriteFailure with the first error.
template <typename Fill>
void write_file(const fs::path& file, Fill&& fill) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw WriteFailure(file, errno);
  int failure = fill(fd);
  if (failure == 0 && ::fsync(fd) != 0) failure = errno;
  if (::close(fd) != 0 && failure == 0) failure = errno;
  if (failure != 0) throw WriteFailure(file, failure);
}

// LibTorch's own file writer cannot be used on a full disk: it throws again from PyTorchStreamWriter's
// destructor, which terminates the process. The writer it is given here always reports success and
// remembers the first failure instead.
void write_archive(torch::serialize::OutputArchive& archive, const fs::path& file) {
  write_file(file, [&](int fd) {
    int failure = 0;
    archive.save_to([&](const void* data, std::size_t size) -> std::size_t {
      if (failure == 0) failure = write_all(fd, static_cast<const char*>(data), size);
      return size;
    });
    return failure;
  });
}

void write_text(const fs::path& file, const std::string& text) {
  write_file(file, [&](int fd) { return write_all(fd, text.data(), text.size()); });
}

// "the disk has 1.2 MB free of 3.0 MB", of the filesystem holding `dir`; "" when it cannot be told.
std::string free_space(const fs::path& dir) {
  struct statvfs fs_info {};
  if (::statvfs(dir.c_str(), &fs_info) != 0) return "";
  char text[96];
  std::snprintf(text, sizeof text, "the disk has %.1f MB free of %.1f MB",
                static_cast<double>(fs_info.f_bavail) * fs_info.f_frsize / 1e6,
                static_cast<double>(fs_info.f_blocks) * fs_info.f_frsize / 1e6);
  return text;
}

// SDK 1.4 strategies may keep parameters sharded at rest (fsdp): they make them whole while the host
// reads or restores them. Older strategies never free them.
void hold_parameters(StrategyInstance& strategy, bool hold) {
  if (strategy.record().descriptor->abi_minor < 4) return;
  sdk::RankRole role;
  strategy.call(strategy->role(&role), "role");
  if (role.unit_events) strategy.call(strategy->hold_parameters(hold), "hold_parameters");
}

// The checkpoint's files, written into `staged`.
void write_checkpoint_files(const fs::path& staged, std::int64_t next_step, ModelInstance& model,
                            StrategyInstance& strategy) {
  std::vector<sdk::Parameter> params;
  std::vector<sdk::NamedTensor> buffers;
  model.call(model->parameters(&params), "parameters");
  model.call(model->buffers(&buffers), "buffers");
  torch::serialize::OutputArchive model_archive;
  hold_parameters(strategy, true);
  for (const auto& p : params) model_archive.write("param/" + p.name, p.tensor.detach().cpu().clone());
  hold_parameters(strategy, false);
  for (const auto& b : buffers) model_archive.write("buffer/" + b.name, b.tensor.detach().cpu());
  model_archive.write("rng/cpu", cpu_rng_state());
  write_archive(model_archive, staged / "model.pt");

  torch::serialize::OutputArchive strategy_archive;
  strategy.call(strategy->save_state(strategy_archive), "save_state");
  write_archive(strategy_archive, staged / "strategy.pt");
  // Written last: its presence marks the checkpoint complete (saved_steps).
  write_text(staged / "state.json", nlohmann::json{{"next_step", next_step}}.dump());
}

}  // namespace

void save_checkpoint(const fs::path& dir, int rank, std::int64_t next_step, ModelInstance& model,
                     StrategyInstance& strategy) {
  const fs::path target = step_dir(dir, rank, next_step);
  const fs::path staged = target.string() + ".staging";
  const std::string what = "checkpoint " + target.filename().string() + " in " + rank_dir(dir, rank).string();
  try {
    fs::remove_all(staged);
    fs::create_directories(staged);
    write_checkpoint_files(staged, next_step, model, strategy);
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
}

std::optional<std::int64_t> load_checkpoint(const fs::path& dir, HostCommunicator& comm, ModelInstance& model,
                                            StrategyInstance& strategy) {
  const int rank = comm.rank();
  const auto mine = saved_steps(dir, rank);
  // The newest step every rank holds is the smallest of the ranks' newest (-1: none).
  const auto newest = gather_from_ranks(comm, mine.empty() ? -1 : mine.front());
  const std::int64_t step = *std::min_element(newest.begin(), newest.end());
  if (step < 0) return std::nullopt;
  const auto holds = gather_from_ranks(comm, std::find(mine.begin(), mine.end(), step) != mine.end() ? 1 : 0);
  if (std::find(holds.begin(), holds.end(), 0) != holds.end()) {
    std::string steps;
    for (std::size_t r = 0; r < newest.size(); ++r) steps += (r ? ", " : "") + std::to_string(newest[r]);
    throw std::runtime_error(dir.string() + ": the ranks' checkpoints have no step in common (newest per rank: " +
                             steps + "); delete the directory to start the cell again");
  }
  const fs::path source = step_dir(dir, rank, step);
  nlohmann::json state;
  std::ifstream(source / "state.json") >> state;

  std::vector<sdk::Parameter> params;
  std::vector<sdk::NamedTensor> buffers;
  model.call(model->parameters(&params), "parameters");
  model.call(model->buffers(&buffers), "buffers");
  torch::serialize::InputArchive model_archive;
  model_archive.load_from((source / "model.pt").string());
  torch::NoGradGuard no_grad;
  auto restore = [&](const std::string& key, const torch::Tensor& into) {
    torch::Tensor saved;
    if (!model_archive.try_read(key, saved))
      throw std::runtime_error(source.string() + ": checkpoint has no '" + key +
                               "': it was written by a different model configuration");
    if (saved.sizes() != into.sizes())
      throw std::runtime_error(source.string() + ": '" + key + "' has shape " + c10::str(saved.sizes()) +
                               " in the checkpoint but " + c10::str(into.sizes()) + " in the model");
    into.copy_(saved);
  };
  hold_parameters(strategy, true);
  for (const auto& p : params) restore("param/" + p.name, p.tensor);
  hold_parameters(strategy, false);
  for (const auto& b : buffers) restore("buffer/" + b.name, b.tensor);
  torch::Tensor rng;
  model_archive.read("rng/cpu", rng);
  set_cpu_rng_state(rng);

  torch::serialize::InputArchive strategy_archive;
  strategy_archive.load_from((source / "strategy.pt").string());
  strategy.call(strategy->load_state(strategy_archive), "load_state");
  return state.at("next_step").get<std::int64_t>();
}

}  // namespace gradsweep::host
