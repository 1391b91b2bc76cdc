#include "llama_module.hpp"

#include <cmath>
#include <string>

namespace gradsweep::models::llama {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

LlamaImpl::LlamaImpl(const LlamaConfig& config)
    : dropout_(config.dropout),
      block_size_(config.block_size),
      head_size_(config.head_size()),
      rope_theta_(config.rope_theta) {
  // Registration order is the parameter order every rank reports: embed_tokens, layers.0 ...
  // layers.{L-1}, norm, lm_head.
  embed_tokens = register_module("embed_tokens", token_embedding(config.padded_vocab(), config.n_embd));
  layers = register_module("layers", torch::nn::ModuleList());
  for (std::int64_t i = 0; i < config.n_layer; ++i) layers->push_back(Block(config));
  norm = register_module("norm", RmsNorm(config.n_embd, config.norm_eps));
  if (!config.tie_embeddings)
    lm_head = register_module(
        "lm_head", torch::nn::Linear(torch::nn::LinearOptions(config.n_embd, config.padded_vocab()).bias(false)));
  init_weights(config);
}

// Every matrix and the embedding ~ N(0, 0.02) (Hugging Face's initializer_range), RMSNorm gains one. The
// two projections that write into the residual stream (o_proj, down_proj) get 0.02/sqrt(2*n_layer), as
// GPT-2's do: the stream sums 2*n_layer of them. The token matrices' padding rows are zero.
void LlamaImpl::init_weights(const LlamaConfig& config) {
  torch::NoGradGuard no_grad;
  const double std_dev = 0.02;
  const double residual_std = std_dev / std::sqrt(2.0 * static_cast<double>(config.n_layer));
  for (auto& item : named_parameters()) {
    const std::string& name = item.key();
    torch::Tensor& p = item.value();
    if (name.find("norm") != std::string::npos)
      p.fill_(1.0);
    else if (name == "embed_tokens.weight" || name == "lm_head.weight")
      init_token_rows(p, config.vocab_size, std_dev);
    else if (ends_with(name, "o_proj.weight") || ends_with(name, "down_proj.weight"))
      p.normal_(0.0, residual_std);
    else
      p.normal_(0.0, std_dev);
  }
}

torch::Tensor LlamaImpl::forward(const torch::Tensor& idx, const sdk::SampleDropout& drop,
                                 const sdk::UnitCalls* units) {
  if (!rotary_.cos.defined() || rotary_.cos.device() != idx.device())
    rotary_ = rotary_tables(block_size_, head_size_, rope_theta_, idx.device());
  auto x = drop(embed_tokens(idx), dropout_, 0, is_training());  // (B,T,C)
  std::uint64_t site = 1;
  std::size_t unit = 0;
  for (const auto& block : *layers) {
    if (units != nullptr) units->begin(unit);
    x = block->as<BlockImpl>()->forward(x, rotary_, drop, site);
    if (units != nullptr) x = units->end(unit, x);
    site += BlockImpl::kDropoutSites;
    ++unit;
  }
  return norm(x);
}

}  // namespace gradsweep::models::llama
