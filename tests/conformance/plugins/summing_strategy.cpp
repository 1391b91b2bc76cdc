// A broken strategy for the conformance kit's tests (tests/conformance): it declares itself
// synchronous-exact and sums the ranks' gradients instead of averaging them (the divisor forgotten).
// Under the kit's AdamW with clipping the scale hardly shows (Adam divides it out, clipping caps it), so
// `exact` may pass; under SGD without clipping every update is N times too large, and `exact (sgd)` must
// say so.
#include <gradsweep/sdk/plugin.hpp>

namespace {

using namespace gradsweep::sdk;

class SummingStrategy final : public Strategy {
 public:
  static constexpr auto kCapabilities = StrategyCapabilities{}.exact().agreeing();

  explicit SummingStrategy(const PluginContext& context) : Strategy(context) {}

 protected:
  void on_setup(const StrategySetup& setup) override { optimizer_.setup(setup); }
  void on_begin_step(const StepContext&) override { optimizer_.zero_grad(); }
  StepResult on_update(const StepContext& step) override {
    for (const auto& p : optimizer_.params()) {
      torch::Tensor grad = p.grad();
      collective::allreduce(context().comm, grad);  // the bug: no division by the number of ranks
    }
    return optimizer_.step(step);
  }
  void on_save_state(torch::serialize::OutputArchive& archive) override { optimizer_.save(archive); }
  void on_load_state(torch::serialize::InputArchive& archive) override { optimizer_.load(archive); }

 private:
  LocalOptimizer optimizer_;
};

constexpr std::array<OptionSpec, 0> kOptions{};

}  // namespace

GRADSWEEP_STRATEGY_PLUGIN("conformance_summing", "1.0.0", "test strategy: declared exact, sums instead of averaging",
                          SummingStrategy, kOptions)
