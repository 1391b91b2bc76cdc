// A broken strategy for the conformance kit's tests (tests/conformance): data parallelism that averages
// gradients correctly and checkpoints its optimizer, and declares that it reshards, but whose
// on_load_resharded forgets the optimizer's state (SGD's momentum, AdamW's moments): a job resumed at another
// world size restarts them from zero. `gradsweep check strategy` must say so on the `reshard` property.
#include <gradsweep/sdk/plugin.hpp>

namespace {

using namespace gradsweep::sdk;

class CarelessReshardStrategy final : public Strategy {
 public:
  static constexpr auto kCapabilities = StrategyCapabilities{}.exact().agreeing().resharding();

  explicit CarelessReshardStrategy(const PluginContext& context) : Strategy(context) {}

 protected:
  void on_setup(const StrategySetup& setup) override { optimizer_.setup(setup); }
  void on_begin_step(const StepContext&) override { optimizer_.zero_grad(); }
  StepResult on_update(const StepContext& step) override {
    Communicator& comm = context().comm;
    for (const auto& p : optimizer_.params()) {
      torch::Tensor grad = p.grad();
      collective::allreduce(comm, grad);
      grad.div_(comm.size());
    }
    return optimizer_.step(step);
  }
  void on_save_state(torch::serialize::OutputArchive& archive) override { optimizer_.save(archive); }
  void on_load_state(torch::serialize::InputArchive& archive) override { optimizer_.load(archive); }
  // The bug: nothing of the old ranks' optimizer state is taken over.
  void on_load_resharded(SavedStates&) override {}

 private:
  LocalOptimizer optimizer_;
};

constexpr std::array<OptionSpec, 0> kOptions{};

}  // namespace

GRADSWEEP_STRATEGY_PLUGIN("conformance_careless_reshard", "1.0.0",
                          "test strategy: declares resharding, forgets the optimizer's state", CarelessReshardStrategy,
                          kOptions)
