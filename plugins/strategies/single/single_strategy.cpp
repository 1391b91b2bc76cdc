// `single`: one rank, no communication. The baseline every other strategy is measured against, and the
// reference whose loss curve the synchronous strategies must reproduce.
#include <gradsweep/sdk/plugin.hpp>

namespace {

using namespace gradsweep::sdk;

class SingleStrategy final : public Strategy {
 public:
  static constexpr auto kCapabilities = StrategyCapabilities{}.ranks(1, 1).exact().agreeing();
  // Says why, and what to pick instead, before the host's generic word on the declared ranks.
  static void check_plan(const PlanFacts& facts, PlanAnswer& answer) {
    if (facts.world_size == 1) return;
    answer.about = "ranks";
    answer.refusal = "strategy 'single' runs on one rank, but the job has " + std::to_string(facts.world_size) +
                     " (nodes x ranks_per_node = " + std::to_string(facts.nodes) + " x " +
                     std::to_string(facts.ranks_per_node) + "); pick a data-parallel strategy (ps, dps, ring) for more";
  }

  explicit SingleStrategy(const PluginContext& context)
      : Strategy(context), compute_dtype_(compute_dtype(context.options.text("precision"))) {
    if (context.comm.size() != 1)
      throw Error("strategy 'single' runs on one rank, but the job has " + std::to_string(context.comm.size()) +
                  "; pick a data-parallel strategy (ps, dps, ring) for more");
  }

 protected:
  PrecisionPolicy on_precision() override { return {compute_dtype_}; }
  void on_setup(const StrategySetup& setup) override { optimizer_.setup(setup); }
  void on_begin_step(const StepContext&) override { optimizer_.zero_grad(); }
  StepResult on_update(const StepContext& step) override { return optimizer_.step(step); }
  void on_save_state(torch::serialize::OutputArchive& archive) override { optimizer_.save(archive); }
  void on_load_state(torch::serialize::InputArchive& archive) override { optimizer_.load(archive); }

 private:
  // bf16 keeps fp32's exponent range, so autocast alone is safe; fp16 would need loss scaling, which the
  // AMP strategies provide. The host has checked the choices; the throw guards direct use.
  static torch::ScalarType compute_dtype(const std::string& precision) {
    if (precision == "fp32") return torch::kFloat;
    if (precision == "bf16") return torch::kBFloat16;
    throw Error("strategy 'single': precision '" + precision +
                "' is not supported; use fp32 or bf16 (fp16 needs loss scaling: use an -amp strategy)");
  }

  torch::ScalarType compute_dtype_;
  LocalOptimizer optimizer_;
};

constexpr std::array<OptionDecl, 1> kOptions{{
    {"precision", OptionType::String, "fp32",
     "fp32, or bf16 (autocast; master weights stay fp32); fp16 needs loss scaling: use an -amp strategy", "fp32|bf16"},
}};

}  // namespace

GRADSWEEP_STRATEGY_PLUGIN("single", "1.0.0", "one rank, no communication: the baseline", SingleStrategy, kOptions)
