// A test model plugin whose softmax cannot be restricted (ModelInfo::supports_output_subset false): a
// bigram table, logits = table[input]. Strategies that sample the vocabulary must refuse it clearly.
#include <gradsweep/sdk/plugin.hpp>

#include <torch/torch.h>

#include <array>
#include <vector>

namespace {

constexpr std::array<gradsweep::sdk::OptionSpec, 1> kOptions{{
    {"vocab_size", gradsweep::sdk::OptionType::Int, "257", "number of token ids"},
}};

class BigramModel final : public gradsweep::sdk::Model {
 public:
  explicit BigramModel(const gradsweep::sdk::PluginContext& context)
      : Model(context),
        vocab_(context.options.integer("vocab_size")),
        table_(torch::zeros({vocab_, vocab_}, torch::requires_grad())) {}

 protected:
  gradsweep::sdk::ModelInfo on_info() override {
    gradsweep::sdk::ModelInfo info;
    info.architecture = "bigram";
    info.vocab_size = vocab_;
    info.num_parameters = table_.numel();
    info.supports_output_subset = false;
    return info;
  }
  std::vector<gradsweep::sdk::Parameter> on_parameters() override { return {{"table", table_, true}}; }
  torch::Tensor on_loss(const gradsweep::sdk::Batch& batch, const gradsweep::sdk::OutputSubset* subset) override {
    if (subset != nullptr) throw gradsweep::sdk::Error("bigram: no output subset");
    const auto logits = table_.index_select(0, batch.inputs.flatten());
    return torch::nn::functional::cross_entropy(logits, batch.targets.flatten());
  }
  double on_flops_per_token(std::int64_t) override { return 6.0 * static_cast<double>(vocab_); }
  void on_set_training(bool) override {}

 private:
  std::int64_t vocab_;
  torch::Tensor table_;
};

}  // namespace

#ifdef GRADSWEEP_TEST_BIGRAM_ABI_MINOR
// As a plugin built against an older SDK minor would describe itself: the host calls no newer method.
GRADSWEEP_PLUGIN_WITH(gradsweep::sdk::PluginKind::Model, "bigram13", "1.0.0",
                      "test model: bigram, as an SDK 1.3 plugin", BigramModel, kOptions, gradsweep::sdk::kAbiMajor,
                      GRADSWEEP_TEST_BIGRAM_ABI_MINOR, gradsweep::sdk::detail::this_build())
#else
GRADSWEEP_MODEL_PLUGIN("bigram", "1.0.0", "test model: a bigram table without output restriction", BigramModel,
                       kOptions)
#endif
