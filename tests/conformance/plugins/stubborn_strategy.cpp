// A broken strategy for the conformance kit's tests (tests/conformance): exact data parallelism whose
// allreduces run on a communication thread of its own, which swallows a failed call (logs it and waits
// for the next batch of work) while the training thread waits for the batch to be done. When a rank's
// communicator fails, that rank never reports it and the others wait for it in their allreduce: the job
// hangs. `gradsweep check strategy` must say so on the `no hang` property.
#include <gradsweep/sdk/plugin.hpp>

#include <condition_variable>
#include <mutex>
#include <thread>

namespace {

using namespace gradsweep::sdk;

class StubbornStrategy final : public Strategy {
 public:
  static constexpr auto kCapabilities = StrategyCapabilities{}.exact().agreeing();

  explicit StubbornStrategy(const PluginContext& context) : Strategy(context) {}
  ~StubbornStrategy() override {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    if (worker_.joinable()) worker_.join();
  }

 protected:
  void on_setup(const StrategySetup& setup) override {
    optimizer_.setup(setup);
    worker_ = std::thread([this] { communicate(); });
  }
  void on_begin_step(const StepContext&) override { optimizer_.zero_grad(); }
  StepResult on_update(const StepContext& step) override {
    std::unique_lock<std::mutex> lock(mutex_);
    ++posted_;
    wake_.notify_all();
    wake_.wait(lock, [this] { return done_ == posted_; });  // forever, once a batch was dropped
    return optimizer_.step(step);
  }
  void on_save_state(torch::serialize::OutputArchive& archive) override { optimizer_.save(archive); }
  void on_load_state(torch::serialize::InputArchive& archive) override { optimizer_.load(archive); }

 private:
  void communicate() {
    Communicator& comm = context().comm;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return stop_ || taken_ < posted_; });
        if (stop_) return;
        ++taken_;
      }
      bool ok = true;
      for (const auto& p : optimizer_.params()) {
        torch::Tensor grad = p.grad();
        const Status status = comm.allreduce(grad, ReduceOp::Sum);
        if (!status.ok) {  // the bug: dropped, the training thread is never told
          context().log.warn(std::string("conformance_stubborn: allreduce failed, will retry: ") + status.message);
          ok = false;
          break;
        }
        grad.div_(comm.size());
      }
      if (!ok) continue;
      const std::lock_guard<std::mutex> lock(mutex_);
      ++done_;
      wake_.notify_all();
    }
  }

  LocalOptimizer optimizer_;
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::uint64_t posted_ = 0, taken_ = 0, done_ = 0;
  bool stop_ = false;
};

constexpr std::array<OptionSpec, 0> kOptions{};

}  // namespace

GRADSWEEP_STRATEGY_PLUGIN("conformance_stubborn", "1.0.0", "test strategy: swallows a failed allreduce and hangs",
                          StubbornStrategy, kOptions)
