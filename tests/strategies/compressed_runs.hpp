#pragma once
// What the tests of the compressing strategies (`powersgd`, `topk`) share: the bytes a step must move,
// computed from the model's shapes by the counting convention of docs/communicators.md; whether the ranks
// ended with identical parameters; and a run that can be cut and resumed in the same directory.
#include "strategies/strategy_runs.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::test {

// The parameter shapes of gpt2-tiny as train_tiny builds it (vocabulary 257 in 384 rows, block 32, n_embd 64, two
// layers, the output layer tied to the embedding): 28 tensors, 126,720 elements.
std::vector<std::vector<std::int64_t>> gpt2_tiny_shapes();
std::int64_t numel_of(const std::vector<std::int64_t>& shape);

// Bytes one rank sends for a float32 (or int32) collective on `ranks` ranks, counted as a ring moves it:
// allreduce of n elements 2(N-1)/N * 4n, allgather of n elements from each rank (N-1)/N * 4nN, rounded down.
std::uint64_t allreduce_bytes(std::int64_t elements, int ranks);
std::uint64_t allgather_bytes(std::int64_t elements_per_rank, int ranks);

// The step numbers (0-based) at which ranks.bytes_sent in metrics.jsonl differs from `expected(step)` on
// any rank, with what was found; empty when every step of every rank matches.
template <class Expected>
std::string unexpected_bytes(const TrainingRun& run, int ranks, Expected expected);

// Empty when every rank's checkpoint at `step` holds the same parameters, bit for bit, as rank 0's; else
// the first that differs.
std::string parameters_differ(const std::filesystem::path& out, int ranks, int step);

// A finished `gradsweep train` into `dir` read back: its result, metrics.jsonl's records, summary.json.
TrainingRun read_run(CommandResult result, const std::filesystem::path& dir);

// `gradsweep train` of gpt2-tiny (train_tiny's cell) with `strategy` into `dir/out`, under mpirun.
TrainingRun train_into(const std::filesystem::path& dir, const std::string& out, int ranks, const std::string& strategy,
                       const std::vector<std::string>& overrides, int steps, const std::string& extra = "");

template <class Expected>
std::string unexpected_bytes(const TrainingRun& run, int ranks, Expected expected) {
  std::string found;
  for (const auto& record : run.steps) {
    const std::int64_t step = record.at("step").get<std::int64_t>();
    const auto& sent = record.at("ranks").at("bytes_sent");
    if (static_cast<int>(sent.size()) != ranks) return "step " + std::to_string(step) + ": " + sent.dump();
    for (const auto& bytes : sent)
      if (bytes.get<std::uint64_t>() != expected(step)) {
        found += "step " + std::to_string(step) + ": " + sent.dump() + " != " + std::to_string(expected(step)) + "\n";
        break;
      }
  }
  return found;
}

}  // namespace gradsweep::test
