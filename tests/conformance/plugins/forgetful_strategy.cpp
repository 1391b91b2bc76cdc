// A broken strategy for the conformance kit's tests (tests/conformance): data parallelism with gradient
// momentum (each step's averaged gradient plus `decay` times the previous one), whose momentum buffer is
// not in its checkpoint. A run resumed from a checkpoint starts that buffer from zero and so differs from
// the uninterrupted run; `gradsweep check strategy` must say so on the `resume` property.
#include <gradsweep/sdk/plugin.hpp>

namespace {

using namespace gradsweep::sdk;

class ForgetfulStrategy final : public Strategy {
 public:
  static constexpr auto kCapabilities = StrategyCapabilities{}.agreeing();

  explicit ForgetfulStrategy(const PluginContext& context)
      : Strategy(context), decay_(context.options.number("decay")) {}

 protected:
  void on_setup(const StrategySetup& setup) override { optimizer_.setup(setup); }
  void on_begin_step(const StepContext&) override { optimizer_.zero_grad(); }
  StepResult on_update(const StepContext& step) override {
    Communicator& comm = context().comm;
    const auto& params = optimizer_.params();
    if (previous_.empty())
      for (const auto& p : params) previous_.push_back(torch::zeros_like(p));
    for (std::size_t i = 0; i < params.size(); ++i) {
      torch::Tensor grad = params[i].grad();
      collective::allreduce(comm, grad);
      grad.div_(comm.size()).add_(previous_[i], decay_);
      previous_[i].copy_(grad);
    }
    return optimizer_.step(step);
  }
  // The bug: previous_ is neither saved nor loaded.
  void on_save_state(torch::serialize::OutputArchive& archive) override { optimizer_.save(archive); }
  void on_load_state(torch::serialize::InputArchive& archive) override { optimizer_.load(archive); }

 private:
  double decay_;
  std::vector<torch::Tensor> previous_;
  LocalOptimizer optimizer_;
};

constexpr std::array<OptionDecl, 1> kOptions{{
    {"decay", OptionType::Float, "0.5", "weight of the previous step's gradient"},
}};

}  // namespace

GRADSWEEP_STRATEGY_PLUGIN("conformance_forgetful", "1.0.0", "test strategy: momentum it does not checkpoint",
                          ForgetfulStrategy, kOptions)
