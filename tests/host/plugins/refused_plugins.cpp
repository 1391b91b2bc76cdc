// Plugins that a correct host must refuse: built with a wrong SDK ABI major, or with a build fingerprint
// claiming another LibTorch. Compiled twice with different REFUSAL definitions (see CMakeLists.txt).
#include <gradsweep/sdk/plugin.hpp>

namespace {

using namespace gradsweep::sdk;

class NeverCreated final : public Strategy {
 public:
  explicit NeverCreated(const PluginContext& context) : Strategy(context) {}

 protected:
  void on_setup(const StrategySetup&) override {}
  void on_begin_step(const StepContext&) override {}
  StepResult on_update(const StepContext&) override { return {}; }
  void on_save_state(torch::serialize::OutputArchive&) override {}
  void on_load_state(torch::serialize::InputArchive&) override {}
};

constexpr std::array<OptionSpec, 0> kOptions{};

constexpr BuildFingerprint other_torch() {
  BuildFingerprint b = gradsweep::sdk::detail::this_build();
  b.torch_major = TORCH_VERSION_MAJOR + 1;
  b.torch_minor = 7;
  return b;
}

}  // namespace

#if REFUSAL == 1
GRADSWEEP_PLUGIN_WITH(PluginKind::Strategy, "wrong_abi", "1.0.0", "built against SDK ABI 99", NeverCreated, kOptions,
                      99, 0, gradsweep::sdk::detail::this_build())
#else
GRADSWEEP_PLUGIN_WITH(PluginKind::Strategy, "wrong_torch", "1.0.0", "built against another LibTorch", NeverCreated,
                      kOptions, kAbiMajor, kAbiMinor, other_torch())
#endif
