#include "train/checkpoint.hpp"

#include "util/atomic_file.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <mutex>

namespace gradsweep::host {
namespace fs = std::filesystem;

namespace {

fs::path rank_dir(const fs::path& dir, int rank) { return dir / ("rank-" + std::to_string(rank)); }

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

}  // namespace

void save_checkpoint(const fs::path& dir, int rank, std::int64_t next_step, ModelInstance& model,
                     StrategyInstance& strategy) {
  const fs::path target = rank_dir(dir, rank);
  const fs::path staged = target.string() + ".staging";
  fs::remove_all(staged);
  fs::create_directories(staged);

  std::vector<sdk::Parameter> params;
  std::vector<sdk::NamedTensor> buffers;
  model.call(model->parameters(&params), "parameters");
  model.call(model->buffers(&buffers), "buffers");
  torch::serialize::OutputArchive model_archive;
  for (const auto& p : params) model_archive.write("param/" + p.name, p.tensor.detach().cpu());
  for (const auto& b : buffers) model_archive.write("buffer/" + b.name, b.tensor.detach().cpu());
  model_archive.write("rng/cpu", cpu_rng_state());
  model_archive.save_to((staged / "model.pt").string());

  torch::serialize::OutputArchive strategy_archive;
  strategy.call(strategy->save_state(strategy_archive), "save_state");
  strategy_archive.save_to((staged / "strategy.pt").string());

  util::write_file_atomically(staged / "state.json", nlohmann::json{{"next_step", next_step}}.dump());
  util::replace_directory(staged, target);
}

std::optional<std::int64_t> load_checkpoint(const fs::path& dir, int rank, ModelInstance& model,
                                            StrategyInstance& strategy) {
  const fs::path source = rank_dir(dir, rank);
  if (!fs::exists(source / "state.json")) return std::nullopt;
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
  for (const auto& p : params) restore("param/" + p.name, p.tensor);
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
