// `periodic_average`: local SGD with periodic model averaging (Stich 2019, "Local SGD Converges Fast and
// Communicates Little"). Each rank takes optimizer steps on its own data; every `period` steps the ranks
// replace their parameters by the average over all ranks. Communication falls by `period` compared with
// averaging gradients every step, at some cost in how closely training follows the single-rank curve.
//
// It is also the example of a third-party plugin: it includes only the SDK and is built out of tree
// against the installed SDK (see CMakeLists.txt beside it and docs/plugins.md).
#include <gradsweep/sdk/plugin.hpp>

namespace {

using namespace gradsweep::sdk;

class PeriodicAverage final : public Strategy {
 public:
  // Ranks drift apart between averages and the run is not `single`'s: declared so, the host does not
  // expect either (capabilities.hpp). It runs on any number of ranks, with any backend.
  static constexpr auto kCapabilities = StrategyCapabilities{};

  // Called by the planner for every cell, before anything runs: a bad period is refused there, with the
  // position of `period` in the experiment file.
  static void check_plan(const PlanFacts& facts, PlanAnswer& answer) {
    const std::int64_t period = facts.options->integer("period");
    if (period < 1) {
      answer.about = "period";
      answer.refusal = "periodic_average: period must be >= 1, got " + std::to_string(period);
    }
    if (period == 1) answer.capabilities = answer.capabilities.agreeing();  // averaged after every step
  }

  explicit PeriodicAverage(const PluginContext& context)
      : Strategy(context), period_(context.options.integer("period")) {
    if (period_ < 1) throw Error("periodic_average: period must be >= 1, got " + std::to_string(period_));
  }

 protected:
  void on_setup(const StrategySetup& setup) override { optimizer_.setup(setup); }
  void on_begin_step(const StepContext&) override { optimizer_.zero_grad(); }

  StepResult on_update(const StepContext& step) override {
    const StepResult result = optimizer_.step(step);
    if ((step.step + 1) % period_ == 0) average_parameters();
    return result;
  }

  void on_save_state(torch::serialize::OutputArchive& archive) override { optimizer_.save(archive); }
  void on_load_state(torch::serialize::InputArchive& archive) override { optimizer_.load(archive); }

 private:
  void average_parameters() {
    Communicator& comm = context().comm;
    if (comm.size() == 1) return;
    torch::NoGradGuard no_grad;
    for (const auto& p : optimizer_.params()) {
      torch::Tensor t = p.detach();
      collective::allreduce(comm, t);
      t.div_(comm.size());
    }
    context().metrics.record("averaged", 1.0);
  }

  std::int64_t period_;
  LocalOptimizer optimizer_;
};

constexpr std::array<OptionSpec, 1> kOptions{{
    {"period", OptionType::Int, "8", "optimizer steps between parameter averages"},
}};

}  // namespace

GRADSWEEP_STRATEGY_PLUGIN("periodic_average", "1.0.0", "local SGD, parameters averaged every `period` steps",
                          PeriodicAverage, kOptions)
