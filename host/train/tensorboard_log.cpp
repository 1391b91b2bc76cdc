#include "train/tensorboard_log.hpp"

#include <tensorboard/hparams_file.hpp>

#include <spdlog/spdlog.h>

#include <map>
#include <stdexcept>

namespace gradsweep::train {
namespace fs = std::filesystem;

namespace {
// metrics.jsonl's top-level keys and their TensorBoard tags (groups); a key not listed keeps its name.
const std::map<std::string, std::string>& tag_of_key() {
  static const std::map<std::string, std::string> tags{
      {"loss", "train/loss"},
      {"lr", "train/lr"},
      {"grad_norm", "train/grad_norm"},
      {"update_applied", "train/update_applied"},
      {"tokens_per_sec", "throughput/tokens_per_sec"},
      {"mfu", "throughput/mfu"},
      {"time_s", "time"},
      {"bytes_sent", "comm/bytes_sent"},
      {"bytes_received", "comm/bytes_received"},
      {"comm", "comm"},
      {"peak_rss_mb", "memory/peak_rss_mb"},
      {"minor_faults", "memory/minor_faults"},
      {"val_loss", "val/loss"},
      {"val_ppl", "val/ppl"},
  };
  return tags;
}

void add_leaves(const std::string& tag, const nlohmann::json& value, std::vector<std::pair<std::string, double>>& out) {
  if (value.is_number()) out.emplace_back(tag, value.get<double>());
  if (value.is_boolean()) out.emplace_back(tag, value.get<bool>() ? 1.0 : 0.0);
  if (value.is_object())
    for (const auto& [key, item] : value.items()) add_leaves(tag + "/" + key, item, out);
  if (value.is_array())
    for (std::size_t i = 0; i < value.size(); ++i) add_leaves(tag + "/" + std::to_string(i), value[i], out);
}
}  // namespace

std::vector<std::pair<std::string, double>> tensorboard_scalars(const nlohmann::json& line) {
  std::vector<std::pair<std::string, double>> scalars;
  for (const auto& [key, value] : line.items()) {
    if (key == "step") continue;
    const auto tag = tag_of_key().find(key);
    add_leaves(tag == tag_of_key().end() ? key : tag->second, value, scalars);
  }
  return scalars;
}

tensorboard::HParams cell_hparams(const config::CellConfig& config, int world_size, const fs::path& out_dir) {
  if (std::optional<tensorboard::HParams> axes = tensorboard::read_hparams_file(out_dir / tensorboard::kSweepAxesFile))
    return *axes;
  return {{"strategy", config.strategy_name},
          {"model", config.model_name},
          {"world_size", static_cast<double>(world_size)},
          {"train.steps", static_cast<double>(config.train.steps)},
          {"train.batch_size", static_cast<double>(config.train.batch_size)},
          {"train.seq_len", static_cast<double>(config.train.seq_len)},
          {"train.lr", config.train.optimizer.lr},
          {"train.seed", static_cast<double>(config.train.seed)},
          {"runtime.device", config.device}};
}

template <class Write>
void TensorBoardLog::guarded(Write&& write) {
  if (!file_) return;
  try {
    write(*file_);
  } catch (const std::exception& e) {
    spdlog::warn("TensorBoard output stops for this cell: {}; training goes on, metrics.jsonl is unaffected", e.what());
    file_.reset();
  }
}

TensorBoardLog::TensorBoardLog(const fs::path& out_dir, bool enabled, const config::CellConfig& config,
                               int world_size) {
  if (!enabled) return;
  try {
    file_.emplace(out_dir / "tensorboard");
  } catch (const std::exception& e) {
    spdlog::warn("no TensorBoard output for this cell: {}; training goes on, metrics.jsonl is unaffected", e.what());
    return;
  }
  guarded([&](tensorboard::EventFile& f) { f.session_start(cell_hparams(config, world_size, out_dir)); });
}

TensorBoardLog::~TensorBoardLog() {
  if (!finished_) guarded([](tensorboard::EventFile& f) { f.session_end(tensorboard::SessionStatus::Failure); });
}

void TensorBoardLog::write_step(std::int64_t step, const nlohmann::json& line) {
  if (line.is_null()) return;
  guarded([&](tensorboard::EventFile& f) { f.scalars(step, tensorboard_scalars(line)); });
}

void TensorBoardLog::finish(std::optional<tensorboard::SessionStatus> status) {
  finished_ = true;
  if (status) guarded([&](tensorboard::EventFile& f) { f.session_end(*status); });
}

}  // namespace gradsweep::train
