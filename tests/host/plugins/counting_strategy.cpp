// A plain data-parallel strategy that counts what the trainer asks of it, built two ways (CMakeLists.txt):
//
//   SDK_1_2   as a plugin built against SDK 1.2 before capabilities existed: abi_minor 2 and a descriptor
//             of that SDK's size (the appended fields absent). The host must load it and treat it as it
//             did: ask output_vocabulary every step and hand it the shard's token counts.
//   otherwise SDK 1.4, declaring restricts_vocabulary = false: the host must ask neither.
//
// Each step it records "vocabulary_calls" (so far) and "token_counts" (1 when set-up had them) in the
// step's metrics, where the tests read them.
#include <gradsweep/sdk/plugin.hpp>

#include <array>
#include <cstddef>

namespace {

using namespace gradsweep::sdk;

class CountingStrategy final : public Strategy {
 public:
#if !SDK_1_2
  static constexpr auto kCapabilities = StrategyCapabilities{}.exact().agreeing();
#endif

  explicit CountingStrategy(const PluginContext& context) : Strategy(context) {}

 protected:
  void on_setup(const StrategySetup& setup) override {
    optimizer_.setup(setup);
    had_token_counts_ = setup.token_counts.defined();
  }
  void on_begin_step(const StepContext&) override { optimizer_.zero_grad(); }
  OutputVocabulary step_vocabulary(const StepBatch&) override {
    ++vocabulary_calls_;
    return {};
  }
  StepResult on_update(const StepContext& step) override {
    Communicator& comm = context().comm;
    for (const auto& p : optimizer_.params()) {
      torch::Tensor grad = p.grad();
      check(comm.allreduce(grad, ReduceOp::Sum));
      grad.div_(comm.size());
    }
    context().metrics.record("vocabulary_calls", static_cast<double>(vocabulary_calls_));
    context().metrics.record("token_counts", had_token_counts_ ? 1.0 : 0.0);
    return optimizer_.step(step);
  }
  void save(torch::serialize::OutputArchive& archive) override { optimizer_.save(archive); }
  void load(torch::serialize::InputArchive& archive) override { optimizer_.load(archive); }

 private:
  std::int64_t vocabulary_calls_ = 0;
  bool had_token_counts_ = false;
  LocalOptimizer optimizer_;
};

constexpr std::array<OptionSpec, 0> kOptions{};

}  // namespace

#if SDK_1_2
namespace {

// PluginDescriptor as SDK 1.0-1.3 laid it out: everything before the 1.4 fields.
struct DescriptorOfSdk12 {
  std::uint32_t struct_size;
  std::uint32_t abi_major;
  std::uint32_t abi_minor;
  PluginKind kind;
  const char* name;
  const char* version;
  const char* summary;
  BuildFingerprint build;
  const OptionSpec* options;
  std::uint32_t option_count;
  void* (*create)(const PluginContext* context, Status* status) noexcept;
  void (*destroy)(void* object) noexcept;
};
static_assert(offsetof(DescriptorOfSdk12, destroy) == offsetof(PluginDescriptor, destroy));
static_assert(sizeof(DescriptorOfSdk12) < sizeof(PluginDescriptor));

using Factory = gradsweep::sdk::detail::Factory<PluginKind::Strategy, CountingStrategy>;
const DescriptorOfSdk12 descriptor{sizeof(DescriptorOfSdk12),
                                   1,
                                   2,
                                   PluginKind::Strategy,
                                   "counting_sdk_1_2",
                                   "1.0.0",
                                   "test strategy built as SDK 1.2",
                                   gradsweep::sdk::detail::this_build(),
                                   kOptions.data(),
                                   0,
                                   &Factory::create,
                                   &Factory::destroy};
const PluginDescriptor* describe() { return reinterpret_cast<const PluginDescriptor*>(&descriptor); }

}  // namespace
BOOST_DLL_ALIAS(describe, gradsweep_plugin)
#else
GRADSWEEP_STRATEGY_PLUGIN("counting_sdk_1_4", "1.0.0", "test strategy declaring restricts_vocabulary = false",
                          CountingStrategy, kOptions)
#endif
