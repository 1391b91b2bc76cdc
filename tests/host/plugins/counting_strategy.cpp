// A plain data-parallel strategy that counts what the trainer asks of it, built as if against several SDK
// minors (CMakeLists.txt sets COUNTING_MINOR, and COUNTING_BROKEN for the broken builds):
//
//   2, 3  before capabilities existed: that minor and a descriptor of that SDK's size (the 1.4 fields
//         absent). The host must load it and treat it as it did: ask output_vocabulary every step and hand
//         it the shard's token counts.
//   4     declaring 1.4's capabilities struct (restricts_vocabulary false): the host must ask neither.
//   8     1.7's capabilities struct, and unit events asked for through RankRole (as before 1.9): the host
//         must send them and call hold_parameters around checkpoints.
//   9     this SDK, declaring units() as a capability: the same, without RankRole.
//   COUNTING_BROKEN=1  minor 9 with a capabilities struct_size that ends before 1.4's `devices`: smaller
//                      than its minor promised.
//   COUNTING_BROKEN=2  minor 4 with 1.2's descriptor: smaller than its minor promised.
//   COUNTING_BROKEN=3  minor 8 whose role() says rank 0 serves while its check_plan says every rank
//                      computes: two answers to one question, which the host refuses.
//
// Each step it records "vocabulary_calls" (so far), "token_counts" (1 when set-up had them), "unit_events"
// and "holds" (so far) in the step's metrics, where the tests read them.
#include <gradsweep/sdk/plugin.hpp>

#include <array>
#include <cstddef>

#ifndef COUNTING_MINOR
#define COUNTING_MINOR 9
#endif
#ifndef COUNTING_BROKEN
#define COUNTING_BROKEN 0
#endif

namespace {

using namespace gradsweep::sdk;

class CountingStrategy final : public Strategy {
 public:
#if COUNTING_MINOR >= 9
  static constexpr auto kCapabilities = StrategyCapabilities{}.exact().agreeing().units();
#endif

  explicit CountingStrategy(const PluginContext& context) : Strategy(context) {}

 protected:
  void on_setup(const StrategySetup& setup) override {
    optimizer_.setup(setup);
    had_token_counts_ = setup.token_counts.defined();
  }
  void on_begin_step(const StepContext&) override { optimizer_.zero_grad(); }
  OutputVocabulary on_output_vocabulary(const StepBatch&) override {
    ++vocabulary_calls_;
    return {};
  }
  // What a plugin before 1.9 answered; a 1.9 host never asks a 1.9 plugin.
  RankRole on_role() override {
#if COUNTING_BROKEN == 3
    return {false, false};
#else
    return {true, COUNTING_MINOR == 8};
#endif
  }
  void on_unit_event(const UnitEvent&) override { ++unit_events_; }
  void on_hold_parameters(bool) override { ++holds_; }
  StepResult on_update(const StepContext& step) override {
    Communicator& comm = context().comm;
    for (const auto& p : optimizer_.params()) {
      torch::Tensor grad = p.grad();
      check(comm.allreduce(grad, ReduceOp::Sum));
      grad.div_(comm.size());
    }
    context().metrics.record("vocabulary_calls", static_cast<double>(vocabulary_calls_));
    context().metrics.record("token_counts", had_token_counts_ ? 1.0 : 0.0);
    context().metrics.record("unit_events", static_cast<double>(unit_events_));
    context().metrics.record("holds", static_cast<double>(holds_));
    return optimizer_.step(step);
  }
  void on_save_state(torch::serialize::OutputArchive& archive) override { optimizer_.save(archive); }
  void on_load_state(torch::serialize::InputArchive& archive) override { optimizer_.load(archive); }

 private:
  std::int64_t vocabulary_calls_ = 0, unit_events_ = 0, holds_ = 0;
  bool had_token_counts_ = false;
  LocalOptimizer optimizer_;
};

constexpr std::array<OptionSpec, 0> kOptions{};
using Factory = gradsweep::sdk::detail::Factory<PluginKind::Strategy, CountingStrategy>;

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

// StrategyCapabilities as SDK 1.4 laid it out, and as 1.7 did (reshards appended).
struct CapabilitiesOfSdk14 {
  std::uint32_t struct_size;
  std::uint32_t min_ranks;
  std::uint32_t max_ranks;
  bool synchronous_exact;
  bool restricts_vocabulary;
  bool ranks_agree;
  CommFeatures required_features;
  DeviceKinds devices;
};
struct CapabilitiesOfSdk17 {
  std::uint32_t struct_size;
  std::uint32_t min_ranks;
  std::uint32_t max_ranks;
  bool synchronous_exact;
  bool restricts_vocabulary;
  bool ranks_agree;
  CommFeatures required_features;
  DeviceKinds devices;
  bool reshards;
};
static_assert(offsetof(CapabilitiesOfSdk14, devices) == offsetof(StrategyCapabilities, devices));
static_assert(offsetof(CapabilitiesOfSdk17, reshards) == offsetof(StrategyCapabilities, reshards));

// Every rank computes: the answer the broken role() contradicts.
[[maybe_unused]] Status every_rank_computes(const PlanFacts* facts, PlanAnswer* answer) noexcept {
  answer->computing_ranks = facts->world_size;
  return {};
}

#define COUNTING_TEXT2(x) #x
#define COUNTING_TEXT(x) COUNTING_TEXT2(x)

#if COUNTING_BROKEN == 1
[[maybe_unused]] constexpr const char* kName = "counting_short_capabilities";
#elif COUNTING_BROKEN == 2
[[maybe_unused]] constexpr const char* kName = "counting_short_descriptor";
#elif COUNTING_BROKEN == 3
[[maybe_unused]] constexpr const char* kName = "counting_role_disagrees";
#else
[[maybe_unused]] constexpr const char* kName = "counting_sdk_1_" COUNTING_TEXT(COUNTING_MINOR);
#endif
[[maybe_unused]] constexpr const char* kSummary = "test strategy built as SDK 1." COUNTING_TEXT(COUNTING_MINOR);

#if COUNTING_MINOR <= 3 || COUNTING_BROKEN == 2
// Declared up to 1.3's descriptor, whatever minor it claims.
const DescriptorOfSdk12 descriptor{sizeof(DescriptorOfSdk12),
                                   kAbiMajor,
                                   COUNTING_MINOR,
                                   PluginKind::Strategy,
                                   kName,
                                   "1.0.0",
                                   kSummary,
                                   gradsweep::sdk::detail::this_build(),
                                   kOptions.data(),
                                   0,
                                   &Factory::create,
                                   &Factory::destroy};
const PluginDescriptor* describe() { return reinterpret_cast<const PluginDescriptor*>(&descriptor); }
#elif COUNTING_MINOR <= 8 || COUNTING_BROKEN == 1
[[maybe_unused]] constexpr CapabilitiesOfSdk14 kCapabilities14{
    sizeof(CapabilitiesOfSdk14), 1, 0, true, false, true, 0, kAnyDevice};
#if COUNTING_MINOR == 4
constexpr const void* kCapabilitiesOfMinor = &kCapabilities14;
#else
#if COUNTING_BROKEN == 1
// A struct_size that ends before `devices` (every version since 1.4 has 32 bytes, the later fields filling
// the padding: only a size written by hand can be short).
constexpr std::uint32_t kCapabilitiesSize = offsetof(CapabilitiesOfSdk14, devices);
#else
constexpr std::uint32_t kCapabilitiesSize = sizeof(CapabilitiesOfSdk17);
#endif
constexpr CapabilitiesOfSdk17 kCapabilities17{kCapabilitiesSize, 1, 0, true, false, true, 0, kAnyDevice, false};
constexpr const void* kCapabilitiesOfMinor = &kCapabilities17;
#endif
// Only the broken build has a plan check, whose answer its role() contradicts.
constexpr Status (*kCheckPlan)(const PlanFacts*, PlanAnswer*) noexcept = COUNTING_BROKEN == 3 ? &every_rank_computes
                                                                                              : nullptr;
const PluginDescriptor descriptor{sizeof(PluginDescriptor),
                                  kAbiMajor,
                                  COUNTING_MINOR,
                                  PluginKind::Strategy,
                                  kName,
                                  "1.0.0",
                                  kSummary,
                                  gradsweep::sdk::detail::this_build(),
                                  kOptions.data(),
                                  0,
                                  &Factory::create,
                                  &Factory::destroy,
                                  static_cast<const StrategyCapabilities*>(kCapabilitiesOfMinor),
                                  kCheckPlan,
                                  nullptr};
const PluginDescriptor* describe() { return &descriptor; }
#endif

}  // namespace

#if COUNTING_MINOR >= 9 && COUNTING_BROKEN == 0
GRADSWEEP_STRATEGY_PLUGIN("counting_sdk_1_9", "1.0.0", "test strategy built as SDK 1.9, declaring units()",
                          CountingStrategy, kOptions)
#else
BOOST_DLL_ALIAS(describe, gradsweep_plugin)
#endif
