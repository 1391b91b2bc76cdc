// The `lstm_lm` model plugin: an LSTM language model (the kind Xiao et al. 2017 trained) behind the
// SDK's Model interface.
#include "lm_loss.hpp"  // plugins/models/common
#include "lstm_config.hpp"
#include "lstm_module.hpp"

#include <gradsweep/sdk/plugin.hpp>

#include <string>
#include <vector>

namespace gradsweep::models::lstm_lm {

class LstmLmModel final : public sdk::Model {
 public:
  explicit LstmLmModel(const sdk::PluginContext& context)
      : sdk::Model(context), config_(resolve_config(context.options)), net_(config_) {
    // Initialised on the CPU from the host-seeded global generator, then moved (LibTorch re-flattens the
    // LSTM weights for cuDNN on the way).
    net_->to(context.device);
    for (const auto& p : net_->parameters()) num_parameters_ += p.numel();
    for (const auto& p : net_->lstm->parameters()) recurrent_parameters_ += p.numel();
    context.log.info("lstm_lm: vocab " + std::to_string(config_.vocab_size) + ", emb_dim " +
                     std::to_string(config_.emb_dim) + ", " + std::to_string(config_.n_layer) + " x " +
                     std::to_string(config_.hidden_dim) + " LSTM, " + (config_.tie_weights ? "tied" : "untied") + ", " +
                     std::to_string(num_parameters_) + " parameters");
  }

 protected:
  sdk::ModelInfo on_info() override {
    sdk::ModelInfo info;
    info.architecture = "lstm_lm";
    info.vocab_size = config_.vocab_size;
    info.block_size = 0;  // recurrent: any length
    info.num_parameters = num_parameters_;
    info.supports_output_subset = true;
    return info;
  }

  // Registration order, dotted names. Both token-indexed matrices are row-sparse. output.bias is indexed
  // by token too (under a sampled softmax only the sampled entries get a gradient), but it is V floats:
  // strategies gain nothing from treating it sparsely, so it is reported dense.
  std::vector<sdk::Parameter> on_parameters() override {
    std::vector<sdk::Parameter> out;
    for (const auto& item : net_->named_parameters()) {
      const bool token_rows = item.key() == "embedding.weight" || item.key() == "output.weight";
      out.push_back({item.key(), item.value(), token_rows});
    }
    return out;
  }

  torch::Tensor on_loss(const sdk::Batch& batch, const sdk::OutputSubset* subset) override {
    const torch::Tensor hidden = hidden_states(batch);
    return models::lm_head_loss(hidden, net_->output_weight(), net_->output->bias, batch, subset);
  }

  // SDK 1.6: the head's outputs before the softmax.
  torch::Tensor on_logits(const sdk::Batch& batch) override {
    const torch::Tensor hidden = hidden_states(batch);
    return models::lm_head_logits(hidden, net_->output_weight(), net_->output->bias);
  }

  // SDK 1.4: each LSTM layer is a unit, "lstm.<l>" (its weight_ih, weight_hh, bias_ih, bias_hh); the
  // embedding and the output layer are the root. With the hooks set the layers run one at a time.
  std::vector<sdk::ModelUnit> on_units() override {
    std::vector<sdk::ModelUnit> units(static_cast<std::size_t>(config_.n_layer));
    for (std::size_t u = 0; u < units.size(); ++u) units[u].name = "lstm." + std::to_string(u);
    std::size_t index = 0;
    for (const auto& item : net_->named_parameters()) {
      const std::string& name = item.key();
      const auto l = name.rfind("_l");
      if (name.rfind("lstm.", 0) == 0 && l != std::string::npos)
        units[std::stoul(name.substr(l + 2))].parameters.push_back(index);
      ++index;
    }
    return units;
  }

  // 6 FLOPs per parameter per token that takes part in a matrix product (2 forward, 4 backward): the
  // LSTM's weights and the (V,H) output matrix with its bias, counted once even when it is the tied
  // embedding. The embedding lookup is a gather and costs nothing. Independent of seq_len.
  double on_flops_per_token(std::int64_t /*seq_len*/) override {
    const std::int64_t output_matrix = config_.vocab_size * config_.hidden_dim;
    return 6.0 * static_cast<double>(recurrent_parameters_ + output_matrix + config_.vocab_size);
  }

  void on_set_training(bool training) override { net_->train(training); }

 private:
  // The last layer's output (B,T,H), keyed dropout and unit hooks included.
  torch::Tensor hidden_states(const sdk::Batch& batch) {
    models::check_batch(batch, /*block_size=*/0, "lstm_lm");
    return net_->forward(batch.inputs, sdk::SampleDropout(batch), &unit_calls());
  }

  LstmConfig config_;
  LstmLm net_;
  std::int64_t num_parameters_ = 0;
  std::int64_t recurrent_parameters_ = 0;
};

}  // namespace gradsweep::models::lstm_lm

GRADSWEEP_MODEL_PLUGIN("lstm_lm", "1.0.0", "LSTM language model (embedding, stacked LSTM, softmax; optional tying)",
                       gradsweep::models::lstm_lm::LstmLmModel, gradsweep::models::lstm_lm::kLstmOptions)
