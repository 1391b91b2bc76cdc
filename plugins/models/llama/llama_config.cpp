#include "llama_config.hpp"

#include "presets.hpp"  // plugins/models/common

#include <gradsweep/sdk/status.hpp>

#include <string>
#include <vector>

namespace gradsweep::models::llama {
namespace {

// docs/models.md lists these with their exact parameter counts; change both together.
const std::vector<NamedPreset<LlamaConfig>>& presets() {
  static const std::vector<NamedPreset<LlamaConfig>> table{
      // Llama 3.2 1B's shape (1,235,814,400 parameters; its 128256 ids need 32-bit token shards), at a
      // 2048-token context.
      {"llama-1b", {16, 32, 8, 2048, 8192, 2048, 128256, 500000.0, 1e-5, true}},
      // GPT-2 124M's width and depth as a Llama (tied head, 4 key/value heads): 121,228,032 parameters.
      {"llama-120m", {12, 12, 4, 768, 2304, 1024, 50257, 10000.0, 1e-5, true}},
      // gpt2-small-cpu's size as a Llama, over the same GPT-2-tokenized shards.
      {"llama-small-cpu", {4, 4, 2, 128, 384, 128, 50257, 10000.0, 1e-5, false}},
      // For tests: a byte vocabulary and two thin blocks with grouped-query attention.
      {"llama-tiny", {2, 4, 2, 64, 192, 64, 256, 10000.0, 1e-5, false}},
  };
  return table;
}

}  // namespace

LlamaConfig resolve_config(const sdk::Options& options) {
  LlamaConfig config = resolve_sizes<LlamaConfig>(options, presets(), "llama",
                                                  {{"n_layer", &LlamaConfig::n_layer},
                                                   {"n_head", &LlamaConfig::n_head},
                                                   {"n_kv_head", &LlamaConfig::n_kv_head},
                                                   {"n_embd", &LlamaConfig::n_embd},
                                                   {"intermediate_size", &LlamaConfig::intermediate_size},
                                                   {"block_size", &LlamaConfig::block_size},
                                                   {"vocab_size", &LlamaConfig::vocab_size}});
  if (options.has("rope_theta")) config.rope_theta = options.number("rope_theta");
  if (options.has("tie_embeddings")) config.tie_embeddings = options.flag("tie_embeddings");
  config.norm_eps = options.number("norm_eps");
  config.dropout = resolve_dropout(options, "llama");
  config.attention = parse_attention_kernel(options.text("attention"), "llama");
  config.vocab_multiple = resolve_vocab_multiple(options, "llama");
  const auto text = [](std::int64_t n) { return std::to_string(n); };
  if (config.n_embd % config.n_head != 0)
    throw sdk::Error("llama: n_embd (" + text(config.n_embd) + ") must be divisible by n_head (" + text(config.n_head) +
                     ")");
  if (config.n_head % config.n_kv_head != 0)
    throw sdk::Error("llama: n_kv_head (" + text(config.n_kv_head) + ") must divide n_head (" + text(config.n_head) +
                     ")");
  if (config.head_size() % 2 != 0)
    throw sdk::Error("llama: the head size n_embd / n_head (" + text(config.head_size()) +
                     ") must be even: rotary embeddings turn pairs of features");
  if (!(config.rope_theta > 1.0)) throw sdk::Error("llama: rope_theta must be above 1");
  if (!(config.norm_eps > 0.0)) throw sdk::Error("llama: norm_eps must be positive");
  return config;
}

}  // namespace gradsweep::models::llama
