// A broken model for `gradsweep check model`: an embedding and an output matrix that trains, but that
// declares one parameter more than it has, and whose dropout draws from LibTorch's global generator
// (torch::dropout) rather than from a key of each sample, so its mask depends on how the batch is split.
// Everything else is right: `parameter count` and `dropout split` fail, every other check passes.
#include <gradsweep/sdk/plugin.hpp>

#include <torch/torch.h>

#include <array>
#include <vector>

namespace {

using namespace gradsweep::sdk;

constexpr std::array<OptionDecl, 2> kOptions{{
    {"vocab_size", OptionType::Int, "64", "number of token ids"},
    {"dropout", OptionType::Float, "0.0", "dropout on the embedding, from the global generator (the bug)"},
}};

class CarelessModel final : public Model {
 public:
  explicit CarelessModel(const PluginContext& context)
      : Model(context),
        vocab_(context.options.integer("vocab_size")),
        dropout_(context.options.number("dropout")),
        embedding_((torch::randn({vocab_, 16}) * 0.02).requires_grad_()),
        output_((torch::randn({vocab_, 16}) * 0.02).requires_grad_()) {}

 protected:
  ModelInfo on_info() override {
    ModelInfo info;
    info.architecture = "careless";
    info.vocab_size = vocab_;
    info.num_parameters = embedding_.numel() + output_.numel() + 1;  // the bug: one too many
    return info;
  }
  std::vector<Parameter> on_parameters() override {
    return {{"embedding", embedding_, true}, {"output", output_, true}};
  }
  torch::Tensor on_loss(const Batch& batch, const OutputSubset*) override {
    torch::Tensor x = embedding_.index_select(0, batch.inputs.flatten()).view({batch.inputs.size(0), -1, 16});
    x = torch::dropout(x, dropout_, training_);  // the bug: not sdk::SampleDropout(batch)
    const torch::Tensor logits = torch::matmul(x, output_.t());
    return torch::nn::functional::cross_entropy(logits.flatten(0, 1), batch.targets.flatten());
  }
  double on_flops_per_token(std::int64_t) override { return 6.0 * static_cast<double>(output_.numel()); }
  void on_set_training(bool training) override { training_ = training; }

 private:
  std::int64_t vocab_;
  double dropout_;
  torch::Tensor embedding_, output_;
  bool training_ = true;
};

}  // namespace

GRADSWEEP_MODEL_PLUGIN("careless_model", "1.0.0", "test model: wrong parameter count, dropout keyed by nothing",
                       CarelessModel, kOptions)
