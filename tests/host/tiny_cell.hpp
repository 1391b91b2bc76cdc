#pragma once
// A tiny GPT-2 cell on the byte corpus for tests that are about something other than training: a couple
// of seconds per run on one thread.
#include "support/test_support.hpp"

#include <filesystem>
#include <string>

namespace gradsweep::test {

// Writes <dir>/cell.yaml: gpt2-tiny, `steps` steps of batch 4 x 32 tokens; `extra` is appended (YAML).
inline std::filesystem::path write_tiny_cell(const std::filesystem::path& dir, int steps,
                                             const std::string& extra = "") {
  const std::filesystem::path corpus = byte_corpus();
  const std::filesystem::path file = dir / "cell.yaml";
  write_text(file, "model: {name: gpt2, preset: gpt2-tiny, vocab_size: 257}\ndata: {train: " +
                       (corpus / "train.bin").string() + ", val: " + (corpus / "val.bin").string() +
                       "}\ntrain: {steps: " + std::to_string(steps) +
                       ", batch_size: 4, seq_len: 32, seed: 3}\neval: {batches: 2}\nruntime: {threads: 1}\n" + extra);
  return file;
}

inline std::string gradsweep_command(const std::string& args) { return gradsweep_binary().string() + " " + args; }

}  // namespace gradsweep::test
