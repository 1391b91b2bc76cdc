#include "gpt2_config.hpp"

#include "presets.hpp"  // plugins/models/common

#include <gradsweep/sdk/status.hpp>

#include <vector>

namespace gradsweep::models::gpt2 {
namespace {

// docs/models.md lists these with their exact parameter counts; change both together.
const std::vector<NamedPreset<Gpt2Config>>& presets() {
  static const std::vector<NamedPreset<Gpt2Config>> table{
      // OpenAI's smallest GPT-2, as in llm.c: 124,439,808 parameters.
      {"gpt2-124m", {12, 12, 768, 1024, 50257, 0.0}},
      // Bai (HP3C 2022): GPT-2 small body over a ~26.7k Chinese vocabulary, trained at n_ctx 512.
      {"gpt2-bai-100m", {12, 12, 768, 512, 26679, 0.0}},
      // Reads the same GPT-2-tokenized shards as gpt2-124m, small enough for a laptop core.
      {"gpt2-small-cpu", {4, 4, 128, 128, 50257, 0.0}},
      // The benchmarks' larger CPU sizes (docs/measurements/single-rank.md): ~4.8M and ~32M parameters over bytes.
      {"gpt2-mid-cpu", {6, 8, 256, 128, 50257, 0.0}},
      {"gpt2-big-cpu", {10, 8, 512, 128, 50257, 0.0}},
      // For tests: a byte vocabulary and two thin blocks.
      {"gpt2-tiny", {2, 2, 64, 64, 256, 0.0}},
  };
  return table;
}

}  // namespace

Gpt2Config resolve_config(const sdk::Options& options) {
  Gpt2Config config = resolve_sizes<Gpt2Config>(options, presets(), "gpt2",
                                                {{"n_layer", &Gpt2Config::n_layer},
                                                 {"n_head", &Gpt2Config::n_head},
                                                 {"n_embd", &Gpt2Config::n_embd},
                                                 {"block_size", &Gpt2Config::block_size},
                                                 {"vocab_size", &Gpt2Config::vocab_size}});
  config.dropout = resolve_dropout(options, "gpt2");
  config.attention = parse_attention_kernel(options.text("attention"), "gpt2");
  config.vocab_multiple = resolve_vocab_multiple(options, "gpt2");
  if (config.n_embd % config.n_head != 0)
    throw sdk::Error("gpt2: n_embd (" + std::to_string(config.n_embd) + ") must be divisible by n_head (" +
                     std::to_string(config.n_head) + ")");
  return config;
}

}  // namespace gradsweep::models::gpt2
