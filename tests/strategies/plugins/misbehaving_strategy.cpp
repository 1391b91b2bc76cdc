// A test strategy that misbehaves on purpose on one rank, for the collective forensics tests
// (failure_test.cpp): plain data parallelism (one allreduce per parameter's gradient, in order), except
// that at step `step` rank `rank` does what `how` says before its collectives:
//   skip   leaves out the allreduce of the first parameter
//   size   allreduces one element less of the first parameter's gradient
//   stop   stops itself (SIGSTOP): alive, silent, as a stuck rank is
//   sleep  sleeps `seconds` outside any collective
#include <gradsweep/sdk/plugin.hpp>

#include <torch/torch.h>

#include <array>
#include <chrono>
#include <csignal>
#include <thread>

namespace {

using namespace gradsweep::sdk;

class MisbehavingStrategy final : public Strategy {
 public:
  explicit MisbehavingStrategy(const PluginContext& context)
      : Strategy(context),
        rank_(context.options.integer("rank")),
        step_(context.options.integer("step")),
        how_(context.options.text("how")),
        seconds_(context.options.number("seconds")) {
    if (how_ != "skip" && how_ != "size" && how_ != "stop" && how_ != "sleep")
      throw Error("strategy 'misbehaving': how must be skip, size, stop or sleep, not '" + how_ + "'");
  }

 protected:
  void on_setup(const StrategySetup& setup) override { optimizer_.setup(setup); }
  void on_begin_step(const StepContext&) override { optimizer_.zero_grad(); }
  StepResult on_update(const StepContext& step) override {
    Communicator& comm = context().comm;
    const bool misbehave = comm.rank() == rank_ && step.step == step_;
    if (misbehave && how_ == "stop") std::raise(SIGSTOP);
    if (misbehave && how_ == "sleep") std::this_thread::sleep_for(std::chrono::duration<double>(seconds_));
    const auto& params = optimizer_.params();
    for (std::size_t i = 0; i < params.size(); ++i) {
      torch::Tensor grad = params[i].grad();
      if (misbehave && i == 0 && how_ == "skip") continue;
      if (misbehave && i == 0 && how_ == "size") {
        torch::Tensor shorter = grad.flatten().narrow(0, 0, grad.numel() - 1).contiguous();
        check(comm.allreduce(shorter, ReduceOp::Sum));
        continue;
      }
      check(comm.allreduce(grad, ReduceOp::Sum));
      grad.div_(comm.size());
    }
    return optimizer_.step(step);
  }
  void on_save_state(torch::serialize::OutputArchive& archive) override { optimizer_.save(archive); }
  void on_load_state(torch::serialize::InputArchive& archive) override { optimizer_.load(archive); }

 private:
  std::int64_t rank_, step_;
  std::string how_;
  double seconds_;
  LocalOptimizer optimizer_;
};

constexpr std::array<OptionSpec, 4> kOptions{{
    {"rank", OptionType::Int, "1", "the rank that misbehaves"},
    {"step", OptionType::Int, "2", "the step at which it does"},
    {"how", OptionType::String, "skip", "skip, size, stop or sleep"},
    {"seconds", OptionType::Float, "60", "how long `sleep` sleeps"},
}};

}  // namespace

GRADSWEEP_STRATEGY_PLUGIN("misbehaving", "1.0.0", "test strategy: one rank misbehaves in its collectives",
                          MisbehavingStrategy, kOptions)
