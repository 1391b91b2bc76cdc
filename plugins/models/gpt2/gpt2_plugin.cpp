// The `gpt2` model plugin: GPT-2 behind the SDK's Model interface.
#include "gpt2_config.hpp"
#include "gpt2_module.hpp"
#include "block_units.hpp"  // plugins/models/common
#include "hf_weights.hpp"   // plugins/models/common
#include "lm_loss.hpp"      // plugins/models/common

#include <gradsweep/sdk/plugin.hpp>

#include <string>
#include <vector>

namespace gradsweep::models::gpt2 {

class Gpt2Model final : public sdk::Model {
 public:
  explicit Gpt2Model(const sdk::PluginContext& context)
      : sdk::Model(context), config_(resolve_config(context.options)), net_(config_) {
    // Initialised on the CPU from the host-seeded global generator, then moved: the same seed gives the
    // same weights whatever the device.
    net_->to(context.device);
    for (const auto& p : net_->parameters()) num_parameters_ += p.numel();
    context.log.info("gpt2: " + std::to_string(config_.n_layer) + " layers, " + std::to_string(config_.n_head) +
                     " heads, n_embd " + std::to_string(config_.n_embd) + ", block_size " +
                     std::to_string(config_.block_size) + ", vocab " + std::to_string(config_.vocab_size) +
                     padding_note() + ", " + std::to_string(num_parameters_) + " parameters");
  }

 protected:
  sdk::ModelInfo on_info() override {
    sdk::ModelInfo info;
    info.architecture = "gpt2";
    info.vocab_size = config_.vocab_size;
    info.block_size = config_.block_size;
    info.num_parameters = num_parameters_;
    info.supports_output_subset = true;
    return info;
  }

  // The module's registration order, under its dotted names ("h.3.attn.c_attn.weight"). wte is the only
  // row-sparse parameter: a step touches the rows of the tokens it reads and of the outputs it scores.
  // Its padding rows (Gpt2Config::vocab_multiple) are parameters too: they are what the GEMM, the
  // optimizer and the gradient exchange handle, so they count in num_parameters, as in llm.c.
  std::vector<sdk::Parameter> on_parameters() override {
    std::vector<sdk::Parameter> out;
    for (const auto& item : net_->named_parameters())
      out.push_back({item.key(), item.value(), item.key() == "wte.weight"});
    return out;
  }

  torch::Tensor on_loss(const sdk::Batch& batch, const sdk::OutputSubset* subset) override {
    const torch::Tensor hidden = hidden_states(batch);
    return models::lm_head_loss(hidden, net_->wte->weight, /*bias=*/{}, batch, subset, config_.vocab_size);
  }

  // SDK 1.6: the head's outputs before the softmax (the export test compares them with transformers').
  torch::Tensor on_logits(const sdk::Batch& batch) override {
    const torch::Tensor hidden = hidden_states(batch);
    return models::lm_head_logits(hidden, net_->wte->weight, /*bias=*/{}, config_.vocab_size);
  }

  // SDK 1.4: each block is a unit, "h.<i>"; the embeddings (wte is also the tied head) and ln_f are the root.
  std::vector<sdk::ModelUnit> on_units() override {
    return block_units(net_->named_parameters(), "h.", config_.n_layer);
  }

  // llm.c's estimate: 6 FLOPs per parameter per token (2 forward, 4 backward) for the matrix products,
  // plus attention's scores and weighted sum, 2*C*T forward per layer each way, times 3 for backward.
  double on_flops_per_token(std::int64_t seq_len) override {
    return 6.0 * static_cast<double>(num_parameters_) +
           6.0 * static_cast<double>(config_.n_layer * config_.n_embd) * static_cast<double>(seq_len);
  }

  void on_set_training(bool training) override { net_->train(training); }

  // SDK 1.5: transformers' GPT2LMHeadModel (hf_layout says where each tensor goes).
  sdk::ExportedWeights on_export_weights(const std::string& format) override {
    require_hf(format, "gpt2");
    return export_hf(hf_config(), hf_layout());
  }

  // SDK 1.6: a GPT2LMHeadModel's weights, as save_pretrained writes them or as OpenAI's GPT-2 was published
  // (no "transformer." prefix, with the attention's mask buffers); a tied head's copy is not read.
  void on_import_weights(const std::string& format, const sdk::ExportedWeights& weights) override {
    require_hf(format, "gpt2");
    import_hf("gpt2", hf_layout(), weights, {"transformer.", {".attn.bias", ".attn.masked_bias", "lm_head.weight"}});
  }

 private:
  // The last layer's output (B,T,C), keyed dropout and unit hooks included.
  torch::Tensor hidden_states(const sdk::Batch& batch) {
    models::check_batch(batch, config_.block_size, "gpt2");
    return net_->forward(batch.inputs, sdk::SampleDropout(batch), &unit_calls());
  }

  std::string hf_config() const {
    return JsonObject()
        .raw("architectures", "[\"GPT2LMHeadModel\"]")
        .text("model_type", "gpt2")
        .integer("vocab_size", config_.vocab_size)
        .integer("n_positions", config_.block_size)
        .integer("n_embd", config_.n_embd)
        .integer("n_layer", config_.n_layer)
        .integer("n_head", config_.n_head)
        .raw("n_inner", "null")
        .text("activation_function", "gelu_new")
        .number("layer_norm_epsilon", 1e-5)
        .number("resid_pdrop", config_.dropout)
        .number("embd_pdrop", config_.dropout)
        .number("attn_pdrop", config_.dropout)
        .flag("scale_attn_weights", true)
        .flag("tie_word_embeddings", true)
        .text("torch_dtype", "float32")
        .str();
  }

  // Names carry "transformer."; the attention and MLP matrices are Conv1D, the transpose of LibTorch's
  // Linear; wte loses its padding rows; the head is tied, so there is no lm_head tensor.
  std::vector<HfTensor> hf_layout() const {
    std::vector<HfTensor> layout;
    for (const auto& item : net_->named_parameters()) {
      const std::string& name = item.key();
      const bool conv1d =
          name.find(".c_") != std::string::npos && name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0;
      layout.push_back({"transformer." + name, item.value(), name == "wte.weight" ? config_.vocab_size : 0, conv1d});
    }
    return layout;
  }

  std::string padding_note() const {
    const std::int64_t padded = config_.padded_vocab();
    return padded == config_.vocab_size ? "" : " (wte padded to " + std::to_string(padded) + " rows)";
  }

  Gpt2Config config_;
  Gpt2 net_;
  std::int64_t num_parameters_ = 0;
};

}  // namespace gradsweep::models::gpt2

GRADSWEEP_MODEL_PLUGIN("gpt2", "1.0.0", "GPT-2 (pre-LN transformer LM, tied head, presets 124M to tiny)",
                       gradsweep::models::gpt2::Gpt2Model, gradsweep::models::gpt2::kGpt2Options)
