// `single`: one rank, no communication. The baseline every other strategy is measured against, and the
// reference whose loss curve the synchronous strategies must reproduce.
#include <gradsweep/sdk/plugin.hpp>

namespace {

using namespace gradsweep::sdk;

class SingleStrategy final : public Strategy {
 public:
  explicit SingleStrategy(const PluginContext& context) : Strategy(context) {
    if (context.comm.size() != 1)
      throw Error("strategy 'single' runs on one rank, but the job has " + std::to_string(context.comm.size()) +
                  "; pick a data-parallel strategy (ps, dps, ring) for more");
  }

 protected:
  void on_setup(const StrategySetup& setup) override {
    params_ = tensors_of(setup.parameters);
    spec_ = setup.optimizer;
    optimizer_ = make_optimizer(spec_, params_);
  }

  void on_begin_step(const StepContext&) override { optimizer_->zero_grad(); }

  StepResult on_update(const StepContext& step) override {
    StepResult result;
    result.grad_norm = clip_to_norm(params_, local_grad_norm_squared(params_), spec_.grad_clip);
    set_learning_rate(*optimizer_, step.lr);
    optimizer_->step();
    return result;
  }

  void save(torch::serialize::OutputArchive& archive) override { optimizer_->save(archive); }
  void load(torch::serialize::InputArchive& archive) override { optimizer_->load(archive); }

 private:
  std::vector<torch::Tensor> params_;
  OptimizerSpec spec_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

constexpr std::array<OptionSpec, 0> kOptions{};

}  // namespace

GRADSWEEP_STRATEGY_PLUGIN("single", "1.0.0", "one rank, no communication: the baseline", SingleStrategy, kOptions)
