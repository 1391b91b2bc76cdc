// The `llama` model plugin: the Llama architecture (RMSNorm, rotary embeddings, SwiGLU, grouped-query
// attention) behind the SDK's Model interface.
#include "llama_config.hpp"
#include "llama_module.hpp"
#include "block_units.hpp"  // plugins/models/common
#include "hf_weights.hpp"   // plugins/models/common
#include "lm_loss.hpp"      // plugins/models/common

#include <gradsweep/sdk/plugin.hpp>

#include <string>
#include <vector>

namespace gradsweep::models::llama {

class LlamaModel final : public sdk::Model {
 public:
  explicit LlamaModel(const sdk::PluginContext& context)
      : sdk::Model(context), config_(resolve_config(context.options)), net_(config_) {
    // Initialised on the CPU from the host-seeded global generator, then moved: the same seed gives the
    // same weights whatever the device.
    net_->to(context.device);
    for (const auto& p : net_->parameters()) num_parameters_ += p.numel();
    const auto n = [](std::int64_t v) { return std::to_string(v); };
    context.log.info(
        "llama: " + n(config_.n_layer) + " layers, " + n(config_.n_head) + " heads (" + n(config_.n_kv_head) +
        " key/value), n_embd " + n(config_.n_embd) + ", mlp " + n(config_.intermediate_size) + ", block_size " +
        n(config_.block_size) + ", vocab " + n(config_.vocab_size) +
        (config_.padded_vocab() == config_.vocab_size ? "" : " (padded to " + n(config_.padded_vocab()) + ")") +
        (config_.tie_embeddings ? ", tied head, " : ", own head, ") + n(num_parameters_) + " parameters");
  }

 protected:
  sdk::ModelInfo on_info() override {
    sdk::ModelInfo info;
    info.architecture = "llama";
    info.vocab_size = config_.vocab_size;
    info.block_size = config_.block_size;
    info.num_parameters = num_parameters_;
    info.supports_output_subset = true;
    return info;
  }

  // The module's registration order, under its dotted names ("layers.3.self_attn.q_proj.weight"). The
  // token matrices are row-sparse: a step touches the rows of the tokens it reads and the outputs it scores.
  std::vector<sdk::Parameter> on_parameters() override {
    std::vector<sdk::Parameter> out;
    for (const auto& item : net_->named_parameters())
      out.push_back({item.key(), item.value(), item.key() == "embed_tokens.weight" || item.key() == "lm_head.weight"});
    return out;
  }

  torch::Tensor on_loss(const sdk::Batch& batch, const sdk::OutputSubset* subset) override {
    const torch::Tensor hidden = hidden_states(batch);
    return models::lm_head_loss(hidden, net_->head_weight(), /*bias=*/{}, batch, subset, config_.vocab_size);
  }

  // SDK 1.6: the head's outputs before the softmax (the export test compares them with transformers').
  torch::Tensor on_logits(const sdk::Batch& batch) override {
    const torch::Tensor hidden = hidden_states(batch);
    return models::lm_head_logits(hidden, net_->head_weight(), /*bias=*/{}, config_.vocab_size);
  }

  // SDK 1.4: each block is a unit, "layers.<i>"; the embedding, the final norm and the head are the root.
  std::vector<sdk::ModelUnit> on_units() override {
    return block_units(net_->named_parameters(), "layers.", config_.n_layer);
  }

  // 6 FLOPs per parameter per token for the matrix products (2 forward, 4 backward), plus attention's
  // scores and weighted sum, 6*C*T per layer (a query head's products are the same with fewer key/value
  // heads). An untied input embedding is a lookup, not a product: it is left out.
  double on_flops_per_token(std::int64_t seq_len) override {
    const double lookup = config_.tie_embeddings ? 0.0 : static_cast<double>(config_.padded_vocab() * config_.n_embd);
    return 6.0 * (static_cast<double>(num_parameters_) - lookup) +
           6.0 * static_cast<double>(config_.n_layer * config_.n_embd) * static_cast<double>(seq_len);
  }

  void on_set_training(bool training) override { net_->train(training); }

  // SDK 1.5: transformers' LlamaForCausalLM: the same names under "model." (the head outside it), the
  // token matrices without their padding rows.
  sdk::ExportedWeights on_export_weights(const std::string& format) override {
    require_hf(format, "llama");
    return export_hf(hf_config(), hf_layout());
  }

  // SDK 1.6: a LlamaForCausalLM's weights (as save_pretrained writes them; older files' rotary inv_freq
  // buffers are skipped, and a tied head's copy when the head is tied).
  void on_import_weights(const std::string& format, const sdk::ExportedWeights& weights) override {
    require_hf(format, "llama");
    HfFileForm form{"", {".rotary_emb.inv_freq"}};
    if (config_.tie_embeddings) form.ignored.push_back("lm_head.weight");
    import_hf("llama", hf_layout(), weights, form);
  }

 private:
  // The last layer's output (B,T,C), keyed dropout and unit hooks included.
  torch::Tensor hidden_states(const sdk::Batch& batch) {
    models::check_batch(batch, config_.block_size, "llama");
    return net_->forward(batch.inputs, sdk::SampleDropout(batch), &unit_calls());
  }

  std::string hf_config() const {
    return JsonObject()
        .raw("architectures", "[\"LlamaForCausalLM\"]")
        .text("model_type", "llama")
        .integer("vocab_size", config_.vocab_size)
        .integer("hidden_size", config_.n_embd)
        .integer("intermediate_size", config_.intermediate_size)
        .integer("num_hidden_layers", config_.n_layer)
        .integer("num_attention_heads", config_.n_head)
        .integer("num_key_value_heads", config_.n_kv_head)
        .integer("head_dim", config_.head_size())
        .integer("max_position_embeddings", config_.block_size)
        .number("rms_norm_eps", config_.norm_eps)
        .number("rope_theta", config_.rope_theta)
        .text("hidden_act", "silu")
        .flag("attention_bias", false)
        .flag("mlp_bias", false)
        .number("attention_dropout", config_.dropout)
        .flag("tie_word_embeddings", config_.tie_embeddings)
        .text("torch_dtype", "float32")
        .str();
  }

  // Names carry "model." except the head; the token matrices lose their padding rows.
  std::vector<HfTensor> hf_layout() const {
    std::vector<HfTensor> layout;
    for (const auto& item : net_->named_parameters()) {
      const std::string& name = item.key();
      const bool token_rows = name == "embed_tokens.weight" || name == "lm_head.weight";
      layout.push_back(
          {name == "lm_head.weight" ? name : "model." + name, item.value(), token_rows ? config_.vocab_size : 0});
    }
    return layout;
  }

  LlamaConfig config_;
  Llama net_;
  std::int64_t num_parameters_ = 0;
};

}  // namespace gradsweep::models::llama

GRADSWEEP_MODEL_PLUGIN("llama", "1.0.0",
                       "Llama (RMSNorm, rotary embeddings, SwiGLU, grouped-query attention; presets 1B to tiny)",
                       gradsweep::models::llama::LlamaModel, gradsweep::models::llama::kLlamaOptions)
