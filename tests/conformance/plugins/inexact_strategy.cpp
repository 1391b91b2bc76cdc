// A broken strategy for the conformance kit's tests (tests/conformance): it declares itself
// synchronous-exact and agreeing, averages every gradient over the ranks but the first parameter's (the
// bucket it "forgets"), which stays each rank's own. On one rank it is `single`; on more it is neither
// exact nor agreeing, and `gradsweep check strategy` must say so on the `exact` property.
#include <gradsweep/sdk/plugin.hpp>

namespace {

using namespace gradsweep::sdk;

class InexactStrategy final : public Strategy {
 public:
  static constexpr auto kCapabilities = StrategyCapabilities{}.exact().agreeing();

  explicit InexactStrategy(const PluginContext& context) : Strategy(context) {}

 protected:
  void on_setup(const StrategySetup& setup) override { optimizer_.setup(setup); }
  void on_begin_step(const StepContext&) override { optimizer_.zero_grad(); }
  StepResult on_update(const StepContext& step) override {
    Communicator& comm = context().comm;
    const auto& params = optimizer_.params();
    for (std::size_t i = 1; i < params.size(); ++i) {  // the bug: from 1, not 0
      torch::Tensor grad = params[i].grad();
      collective::allreduce(comm, grad);
      grad.div_(comm.size());
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

GRADSWEEP_STRATEGY_PLUGIN("conformance_inexact", "1.0.0", "test strategy: declared exact, forgets one bucket",
                          InexactStrategy, kOptions)
