#include "gpt2_module.hpp"

#include <torch/utils.h>

#include <cmath>
#include <string>

namespace gradsweep::models::gpt2 {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Gpt2Impl::Gpt2Impl(const Gpt2Config& config) : dropout_(config.dropout), vocab_size_(config.vocab_size) {
  // Registration order is the parameter order every rank reports: wte, wpe, h.0 ... h.{L-1}, ln_f.
  wte = register_module("wte", token_embedding(config.padded_vocab(), config.n_embd));
  wpe = register_module("wpe", torch::nn::Embedding(config.block_size, config.n_embd));
  h = register_module("h", torch::nn::ModuleList());
  for (std::int64_t i = 0; i < config.n_layer; ++i)
    h->push_back(Block(config.n_embd, config.n_head, config.dropout, config.attention));
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.n_embd})));
  init_weights(config.n_layer);
}

// As in GPT-2 (and nanoGPT, llm.c): every matrix and both embeddings ~ N(0, 0.02), biases zero,
// LayerNorm gain one and shift zero. The two projections that write into the residual stream
// (attn.c_proj, mlp.c_proj) get std 0.02/sqrt(2*n_layer): the stream sums 2*n_layer of them, and this
// keeps its variance at initialisation independent of depth. wte's padding rows are zero and take no
// draw, so that a padded model starts where the unpadded one does.
void Gpt2Impl::init_weights(std::int64_t n_layer) {
  torch::NoGradGuard no_grad;
  const double std_dev = 0.02;
  const double residual_std = std_dev / std::sqrt(2.0 * static_cast<double>(n_layer));
  for (auto& item : named_parameters()) {
    const std::string& name = item.key();
    torch::Tensor& p = item.value();
    const bool is_norm = name.find("ln_") != std::string::npos;
    if (is_norm) {
      ends_with(name, ".weight") ? p.fill_(1.0) : p.zero_();
    } else if (ends_with(name, ".bias")) {
      p.zero_();
    } else if (name == "wte.weight") {
      init_token_rows(p, vocab_size_, std_dev);
    } else if (ends_with(name, "c_proj.weight")) {
      p.normal_(0.0, residual_std);
    } else {
      p.normal_(0.0, std_dev);
    }
  }
}

torch::Tensor Gpt2Impl::forward(const torch::Tensor& idx, const sdk::SampleDropout& drop, const sdk::UnitCalls* units) {
  const std::int64_t T = idx.size(1);
  const auto pos = torch::arange(T, torch::TensorOptions().dtype(torch::kLong).device(idx.device()));  // (T,)
  auto x = drop(wte(idx) + wpe(pos), dropout_, 0, is_training());  // (B,T,C) + (T,C) broadcast over the batch
  std::uint64_t site = 1;
  std::size_t unit = 0;
  for (const auto& block : *h) {
    if (units != nullptr) units->begin(unit);
    x = block->as<BlockImpl>()->forward(x, drop, site);
    if (units != nullptr) x = units->end(unit, x);
    site += BlockImpl::kDropoutSites;
    ++unit;
  }
  return ln_f(x);
}

}  // namespace gradsweep::models::gpt2
