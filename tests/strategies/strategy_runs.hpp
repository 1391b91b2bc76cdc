#pragma once
// Training runs of real `gradsweep train` processes (under mpirun for more than one rank) on the tiny
// GPT-2 and LSTM models and the byte-level fortunes corpus, and what the strategy tests read back.
#include "support/test_support.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <cstdint>
#include <vector>

namespace gradsweep::test {

// Gpt2 and Lstm read the byte-level corpus; LstmWords the word-level one (vocabulary 2000), and so
// does BigramWords, the test plugin `bigram` (tests/strategies/plugins; GRADSWEEP_PLUGIN_PATH must name it).
enum class TinyModel { Gpt2, Llama, Lstm, LstmWords, BigramWords };
std::string name_of(TinyModel model);

struct TrainingRun {
  CommandResult result;
  std::filesystem::path dir;
  std::vector<nlohmann::json> steps;  // metrics.jsonl, one record per step
  nlohmann::json summary;
  std::vector<double> losses() const;
  std::string log(int rank) const;  // rank-<r>.log
};

// Trains `model` for `steps` steps (global batch 8 x 32 tokens, lr 3e-3, clipping at 1.0, seed fixed)
// with `strategy` and its options (`--set` overrides such as "strategy.mode=async").
TrainingRun train_tiny(TinyModel model, int ranks, const std::string& strategy,
                       const std::vector<std::string>& overrides = {}, int steps = 20);

// The experiment file train_tiny writes (cell.yaml in `dir`), for tests that launch `gradsweep train`
// themselves (several runs into one output directory, extra command-line flags).
std::filesystem::path tiny_cell(const std::filesystem::path& dir, TinyModel model, const std::string& strategy,
                                int steps = 20);

// `single` on one rank with `overrides`, trained once per test binary, model, steps and overrides.
const TrainingRun& single_reference(TinyModel model, int steps = 20, const std::vector<std::string>& overrides = {});

// The overrides `a` and then `b`: a case's own options after those the whole suite passes.
inline std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// gpt2-tiny as the strategy tests configure it (n_layer 2, n_embd 64, vocab 257 in 384 rows, block_size 32):
// the size of its root unit (wte, wpe, ln_f) and of one block (ln_1, c_attn, c_proj, ln_2, c_fc, mlp.c_proj
// with their biases), what fsdp and hsdp shard unit by unit.
inline constexpr std::int64_t kTinyGpt2Embd = 64, kTinyGpt2Layers = 2;
inline constexpr std::int64_t kTinyGpt2RootNumel = 384 * kTinyGpt2Embd + 32 * kTinyGpt2Embd + 2 * kTinyGpt2Embd;
inline constexpr std::int64_t kTinyGpt2BlockNumel = 12 * kTinyGpt2Embd * kTinyGpt2Embd + 13 * kTinyGpt2Embd;

// max over steps of |a - b| / |b|.
double max_relative_difference(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace gradsweep::test
