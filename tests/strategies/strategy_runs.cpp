#include "strategies/strategy_runs.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <stdexcept>
#include <tuple>

namespace gradsweep::test {
namespace fs = std::filesystem;

std::string name_of(TinyModel model) {
  switch (model) {
    case TinyModel::Gpt2: return "gpt2";
    case TinyModel::Llama: return "llama";
    case TinyModel::Lstm: return "lstm";
    case TinyModel::LstmWords: return "lstm-words";
    case TinyModel::BigramWords: return "bigram-words";
  }
  return "?";
}

namespace {

std::string model_section(TinyModel model) {
  switch (model) {
    case TinyModel::Gpt2: return "model: {name: gpt2, preset: gpt2-tiny, vocab_size: 257, block_size: 32}\n";
    case TinyModel::Llama: return "model: {name: llama, preset: llama-tiny, vocab_size: 257, block_size: 32}\n";
    case TinyModel::Lstm: return "model: {name: lstm_lm, preset: lstm-tiny, vocab_size: 257}\n";
    case TinyModel::LstmWords:
      return "model: {name: lstm_lm, preset: lstm-tiny, vocab_size: " + std::to_string(kWordCorpusVocab) + "}\n";
    case TinyModel::BigramWords: return "model: {name: bigram, vocab_size: " + std::to_string(kWordCorpusVocab) + "}\n";
  }
  return {};
}

fs::path write_cell(const fs::path& dir, TinyModel model, const std::string& strategy, int steps) {
  const fs::path corpus =
      model == TinyModel::LstmWords || model == TinyModel::BigramWords ? word_corpus() : byte_corpus();
  const fs::path file = dir / "cell.yaml";
  write_text(
      file, model_section(model) + "strategy: {name: " + strategy + "}\n" +
                "data: {train: " + (corpus / "train.bin").string() + ", val: " + (corpus / "val.bin").string() + "}\n" +
                "train: {steps: " + std::to_string(steps) +
                ", batch_size: 8, seq_len: 32, lr: 3e-3, grad_clip: 1.0, seed: 7}\n"
                "eval: {batches: 2}\ncheckpoint: {every: 0}\nmetrics: {peak_flops: 1e10}\nruntime: {threads: 1}\n");
  return file;
}

}  // namespace

fs::path tiny_cell(const fs::path& dir, TinyModel model, const std::string& strategy, int steps) {
  return write_cell(dir, model, strategy, steps);
}

std::vector<double> TrainingRun::losses() const {
  std::vector<double> out;
  for (const auto& s : steps) out.push_back(s.at("loss").get<double>());
  return out;
}

std::string TrainingRun::log(int rank) const { return read_text(dir / ("rank-" + std::to_string(rank) + ".log")); }

TrainingRun train_tiny(TinyModel model, int ranks, const std::string& strategy,
                       const std::vector<std::string>& overrides, int steps) {
  TrainingRun run;
  run.dir = scratch_dir(name_of(model) + "-" + strategy + "-" + std::to_string(ranks));
  std::string command = gradsweep_binary().string() + " train " + write_cell(run.dir, model, strategy, steps).string() +
                        " --out " + (run.dir / "out").string();
  for (const auto& o : overrides) command += " --set " + o;
  run.result = run_command(ranks == 1 ? command : mpirun(ranks, command, "", 120));
  run.dir /= "out";
  std::ifstream metrics(run.dir / "metrics.jsonl");
  for (std::string line; std::getline(metrics, line);) run.steps.push_back(nlohmann::json::parse(line));
  if (fs::exists(run.dir / "summary.json")) run.summary = nlohmann::json::parse(read_text(run.dir / "summary.json"));
  return run;
}

const TrainingRun& single_reference(TinyModel model, int steps, const std::vector<std::string>& overrides) {
  using Key = std::tuple<TinyModel, int, std::vector<std::string>>;
  static std::map<Key, TrainingRun> cache;
  const Key key{model, steps, overrides};
  auto it = cache.find(key);
  if (it == cache.end()) {
    TrainingRun run = train_tiny(model, 1, "single", overrides, steps);
    if (run.result.exit_code != 0) throw std::runtime_error("the single reference failed:\n" + run.result.output);
    it = cache.emplace(key, std::move(run)).first;
  }
  return it->second;
}

double max_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]) / std::abs(b[i]));
  return worst;
}

}  // namespace gradsweep::test
