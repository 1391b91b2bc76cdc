#include "gpt2_config.hpp"

#include <gradsweep/sdk/status.hpp>

#include <utility>
#include <vector>

namespace gradsweep::models::gpt2 {
namespace {

struct NamedPreset {
  const char* name;
  Gpt2Config config;
};

// docs/models.md lists these with their exact parameter counts; change both together.
const std::vector<NamedPreset>& presets() {
  static const std::vector<NamedPreset> table{
      // OpenAI's smallest GPT-2, as in llm.c: 124,439,808 parameters.
      {"gpt2-124m", {12, 12, 768, 1024, 50257, 0.0}},
      // Bai (HP3C 2022): GPT-2 small body over a ~26.7k Chinese vocabulary, trained at n_ctx 512.
      {"gpt2-bai-100m", {12, 12, 768, 512, 26679, 0.0}},
      // Reads the same GPT-2-tokenized shards as gpt2-124m, small enough for a laptop core.
      {"gpt2-small-cpu", {4, 4, 128, 128, 50257, 0.0}},
      // For tests: a byte vocabulary and two thin blocks.
      {"gpt2-tiny", {2, 2, 64, 64, 256, 0.0}},
  };
  return table;
}

void require_positive(std::int64_t value, const char* key) {
  if (value <= 0) throw sdk::Error("gpt2: " + std::string(key) + " must be positive, got " + std::to_string(value));
}

}  // namespace

std::string preset_names() {
  std::string names;
  for (const auto& p : presets()) names += (names.empty() ? "" : ", ") + std::string(p.name);
  return names;
}

Gpt2Config preset(const std::string& name) {
  for (const auto& p : presets())
    if (name == p.name) return p.config;
  throw sdk::Error("gpt2: unknown preset '" + name + "'; known presets: " + preset_names());
}

Gpt2Config resolve_config(const sdk::Options& options) {
  const bool has_preset = options.has("preset");
  Gpt2Config config = has_preset ? preset(options.text("preset")) : Gpt2Config{};

  const std::pair<const char*, std::int64_t*> sizes[] = {
      {"n_layer", &config.n_layer},       {"n_head", &config.n_head},         {"n_embd", &config.n_embd},
      {"block_size", &config.block_size}, {"vocab_size", &config.vocab_size},
  };
  for (const auto& [key, field] : sizes) {
    if (options.has(key)) {
      *field = options.integer(key);
    } else if (!has_preset) {
      throw sdk::Error(std::string("gpt2: option '") + key + "' is not set and no preset was given; set 'preset' (" +
                       preset_names() + ") or all of n_layer, n_head, n_embd, block_size, vocab_size");
    }
    require_positive(*field, key);
  }
  config.dropout = options.number_or("dropout", 0.0);

  if (config.n_embd % config.n_head != 0)
    throw sdk::Error("gpt2: n_embd (" + std::to_string(config.n_embd) + ") must be divisible by n_head (" +
                     std::to_string(config.n_head) + ")");
  if (config.dropout < 0.0 || config.dropout >= 1.0)
    throw sdk::Error("gpt2: dropout must be in [0, 1), got " + std::to_string(config.dropout));
  return config;
}

}  // namespace gradsweep::models::gpt2
