// How the SDK grows (docs/plugins.md): plugin-written structs read through one helper that never reads past
// their struct_size and refuses one smaller than the plugin's minor promised; appended methods reached
// through one checked accessor; who computes and who hears unit events declared once. The counting
// strategy built as if against SDK 1.2, 1.3, 1.4, 1.8 and 1.9 loads and trains; the broken builds are
// refused with an error naming them, without a crash.
#include "comm/core/host_communicator.hpp"
#include "plugins/plugin_declarations.hpp"
#include "plugins/plugin_instance.hpp"
#include "plugins/plugin_registry.hpp"
#include "plugins/rank_duties.hpp"
#include "plugins/sized_struct.hpp"
#include "services/logging.hpp"
#include "services/step_metrics.hpp"
#include "support/test_support.hpp"
#include "tiny_cell.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace gradsweep {
namespace {

using plugins::PluginRegistry;
using sdk::PluginKind;
namespace fs = std::filesystem;

const fs::path kCountingDir = GRADSWEEP_TEST_COUNTING_DIR;
const fs::path kRefusedDir = GRADSWEEP_TEST_REFUSED_DIR;

// ---- read_sized ----------------------------------------------------------------------------------------

TEST(SizedStruct, ReadsOnlyThePrefixThePluginWroteAndItsMinorHas) {
  constexpr std::size_t kSize17 = offsetof(sdk::StrategyCapabilities, reshards) + sizeof(bool);
  alignas(sdk::StrategyCapabilities) unsigned char memory[2 * sizeof(sdk::StrategyCapabilities)];
  std::memset(memory, 0xff, sizeof memory);  // what lies beyond the plugin's struct: never to be read
  sdk::StrategyCapabilities written = sdk::StrategyCapabilities{}.ranks(3, 0).resharding();
  written.struct_size = kSize17;
  std::memcpy(memory, &written, kSize17);
  const auto* plugin = reinterpret_cast<const sdk::StrategyCapabilities*>(memory);
  const sdk::StrategyCapabilities read = plugins::read_sized(plugin, 8, "strategy 'old'");
  EXPECT_EQ(read.min_ranks, 3u);
  EXPECT_TRUE(read.reshards);
  EXPECT_FALSE(read.unit_events);   // 1.9's: its default, not 0xff
  EXPECT_TRUE(read.deterministic);  // likewise: a plugin before 1.9 counts as deterministic
  EXPECT_EQ(read.struct_size, sizeof(sdk::StrategyCapabilities));
  // A struct_size larger than its minor's struct (claims 1.7, writes 1.9's size): 1.9's fields still unread.
  written.struct_size = sizeof(sdk::StrategyCapabilities);
  std::memcpy(memory, &written, sizeof written);
  reinterpret_cast<sdk::StrategyCapabilities*>(memory)->unit_events = true;
  EXPECT_FALSE(plugins::read_sized(plugin, 7, "strategy 'old'").unit_events);
  EXPECT_TRUE(plugins::read_sized(plugin, 9, "strategy 'new'").unit_events);
}

TEST(SizedStruct, AStructSmallerThanItsMinorPromisedIsAnErrorNamingThePlugin) {
  sdk::StrategyCapabilities caps;
  caps.struct_size = offsetof(sdk::StrategyCapabilities, reshards) + sizeof(bool);  // 1.7's size
  try {
    (void)plugins::read_sized(&caps, 9, "strategy 'shorty'");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("strategy 'shorty': its StrategyCapabilities is " + std::to_string(caps.struct_size) +
                       " bytes, but SDK 1.9"),
              std::string::npos)
        << msg;
  }
  EXPECT_NO_THROW((void)plugins::read_sized(&caps, 8, "strategy 'fine'"));
  EXPECT_EQ(plugins::size_required<sdk::PluginDescriptor>(3), offsetof(sdk::PluginDescriptor, capabilities));
}

// ---- the registry: old minors load, broken builds are refused by name ---------------------------------

TEST(SdkGrowth, EveryOlderMinorLoadsAndSaysWhatItsSdkHad) {
  PluginRegistry registry;
  registry.scan({kCountingDir});
  ASSERT_TRUE(registry.refused().empty()) << registry.refused().front().reason;
  for (const int minor : {2, 3, 4, 8, 9}) {
    const plugins::PluginRecord& r = registry.find(PluginKind::Strategy, "counting_sdk_1_" + std::to_string(minor));
    EXPECT_EQ(r.descriptor->abi_minor, static_cast<std::uint32_t>(minor));
    const auto caps = plugins::declared_capabilities(r);
    EXPECT_EQ(caps.has_value(), minor >= 4) << minor;
    if (caps) {
      EXPECT_TRUE(caps->synchronous_exact) << minor;
      EXPECT_EQ(caps->unit_events, minor == 9) << minor;  // 1.8 asks through RankRole, not here
      EXPECT_TRUE(caps->deterministic) << minor;
    }
  }
}

TEST(SdkGrowth, StructsSmallerThanTheirMinorPromisedAreRefusedNamingThePlugin) {
  for (const auto& [file, name, what] :
       {std::tuple{"test_plugin_counting_short_capabilities.so", "counting_short_capabilities", "StrategyCapabilities"},
        std::tuple{"test_plugin_counting_short_descriptor.so", "counting_short_descriptor", "PluginDescriptor"}}) {
    PluginRegistry registry;
    registry.load_file(kRefusedDir / file);
    ASSERT_EQ(registry.refused().size(), 1u) << file;
    const std::string reason = registry.refused()[0].reason;
    EXPECT_NE(reason.find(std::string("strategy '") + name + "': its " + what + " is "), std::string::npos) << reason;
    EXPECT_NE(reason.find("rebuild the plugin"), std::string::npos) << reason;
    EXPECT_TRUE(registry.plugins().empty());
  }
}

TEST(SdkGrowth, TrainingWithARefusedBuildFailsWithItsReasonAndNoCrash) {
  const fs::path dir = test::scratch_dir();
  const fs::path cell = test::write_tiny_cell(
      dir, 2, "strategy: {name: counting_short_capabilities}\nplugins: {paths: [" + kRefusedDir.string() + "]}\n");
  const auto r = test::run_command(
      "timeout 120 " + test::gradsweep_command("train " + cell.string() + " --out " + (dir / "out").string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;  // an error (main's exit code), not a signal
  EXPECT_NE(r.output.find("unknown strategy plugin 'counting_short_capabilities'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("strategy 'counting_short_capabilities': its StrategyCapabilities is"), std::string::npos)
      << r.output;
}

// ---- the checked accessor -------------------------------------------------------------------------------

template <auto Method>
concept InTheTable = requires {
  plugins::AbiMethod<Method>::minor;
};
static_assert(InTheTable<&sdk::StrategyAbi::load_resharded> && InTheTable<&sdk::ModelAbi::logits>);
static_assert(!InTheTable<&sdk::UnitCalls::active>, "only the boundary's methods can be called");

// A strategy instance of `record` on one rank, with everything its context borrows.
struct Hosted {
  explicit Hosted(const plugins::PluginRecord& record)
      : logger("strategy " + record.name),
        comm(comm::make_local_communicator()),
        instance(record, sdk::PluginContext{options, logger, metrics, *comm, torch::Device(torch::kCPU)}) {}
  sdk::Options options;
  services::PluginLogger logger;
  services::StepMetrics metrics;
  std::unique_ptr<comm::HostCommunicator> comm;
  plugins::StrategyInstance instance;
};

TEST(SdkGrowth, AMethodThePluginsSdkLacksIsNeverCalled) {
  PluginRegistry registry;
  registry.scan({kCountingDir});
  Hosted old(registry.find(PluginKind::Strategy, "counting_sdk_1_3"));
  EXPECT_TRUE(old.instance.has<&sdk::StrategyAbi::role>());
  EXPECT_FALSE(old.instance.has<&sdk::StrategyAbi::unit_event>());
  EXPECT_FALSE(old.instance.call_if_present<&sdk::StrategyAbi::hold_parameters>(true));
  try {
    old.instance.call<&sdk::StrategyAbi::unit_event>(sdk::UnitEvent{});
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "strategy plugin 'counting_sdk_1_3' was built against SDK 1.3, which has no unit_event (SDK 1.4)");
  }
  EXPECT_THROW(old.instance.current(), std::runtime_error);  // its vtable may end before this SDK's does
  Hosted current(registry.find(PluginKind::Strategy, "counting_sdk_1_9"));
  EXPECT_TRUE(current.instance.call_if_present<&sdk::StrategyAbi::hold_parameters>(false));
}

TEST(SdkGrowth, UnitEventsComeFromTheDeclarationOrFromRoleBefore19) {
  PluginRegistry registry;
  registry.scan({kCountingDir});
  const auto hears = [&](const char* name) {
    Hosted h(registry.find(PluginKind::Strategy, name));
    return plugins::hears_unit_events(h.instance);
  };
  EXPECT_FALSE(hears("counting_sdk_1_3"));
  EXPECT_FALSE(hears("counting_sdk_1_4"));
  EXPECT_TRUE(hears("counting_sdk_1_8"));  // RankRole::unit_events, as 1.4 to 1.8 said it
  EXPECT_TRUE(hears("counting_sdk_1_9"));  // declared: units()
}

TEST(SdkGrowth, WhoComputesIsThePlanAnswerAndAnOlderRoleMustAgree) {
  plugins::PlanVerdict plan;
  plan.computing_ranks = 2;
  plan.answered = true;
  EXPECT_FALSE(plugins::computes_by_plan(plan, 0, 3));  // the lowest ranks serve
  EXPECT_TRUE(plugins::computes_by_plan(plan, 1, 3));
  EXPECT_TRUE(plugins::computes_by_plan(plan, 2, 3));

  PluginRegistry registry;
  registry.scan({kCountingDir});
  Hosted disagrees(registry.find(PluginKind::Strategy, "counting_role_disagrees"));
  plugins::PlanVerdict all;
  all.computing_ranks = 1;
  all.answered = true;
  try {
    (void)plugins::rank_duties(disagrees.instance, all, 0, 1);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("strategy 'counting_role_disagrees' (SDK 1.8): its role() says rank 0 does not compute, but "
                       "its check_plan says 1 of 1 ranks compute"),
              std::string::npos)
        << msg;
  }
  // Without a plan answer (SDK 1.1 to 1.3 had no check_plan), role() alone decides.
  all.answered = false;
  EXPECT_FALSE(plugins::rank_duties(disagrees.instance, all, 0, 1).computes);
}

// ---- trained through the CLI ----------------------------------------------------------------------------

struct Trained {
  test::CommandResult result;
  std::vector<nlohmann::json> plugin;  // each step's "plugin" scalars
};

Trained train_fixture(const std::string& name) {
  const fs::path dir = test::scratch_dir(name);
  const fs::path cell =
      test::write_tiny_cell(dir, 4,
                            "strategy: {name: " + name + "}\nplugins: {paths: [" + kCountingDir.string() +
                                "]}\nmetrics: {peak_flops: 1e11}\ncheckpoint:\n  every: 2\n");
  Trained t;
  t.result = test::run_command("timeout 120 " +
                               test::gradsweep_command("train " + cell.string() + " --out " + (dir / "out").string()));
  std::ifstream in(dir / "out" / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) t.plugin.push_back(nlohmann::json::parse(line).at("plugin"));
  return t;
}

TEST(SdkGrowth, EachMinorTrainsWithWhatItsSdkHad) {
  for (const int minor : {2, 3, 4, 8, 9}) {
    const Trained t = train_fixture("counting_sdk_1_" + std::to_string(minor));
    ASSERT_EQ(t.result.exit_code, 0) << minor << t.result.output;
    ASSERT_EQ(t.plugin.size(), 4u) << minor;
    const nlohmann::json& last = t.plugin.back();
    // Before capabilities (1.2, 1.3) it is asked for the vocabulary every step; declaring it does not, never.
    EXPECT_EQ(last.at("vocabulary_calls").get<double>(), minor < 4 ? 4.0 : 0.0) << minor;
    // Unit events, and hold_parameters around the checkpoint at step 2: through RankRole at 1.8, declared at 1.9.
    const bool units = minor >= 8;
    EXPECT_EQ(last.at("unit_events").get<double>() > 0, units) << minor;
    EXPECT_EQ(last.at("holds").get<double>() >= 2, units) << minor << " " << last.dump();
  }
}

TEST(SdkGrowth, TrainingStopsWhenAnOlderRoleContradictsItsPlanAnswer) {
  const Trained t = train_fixture("counting_role_disagrees");
  EXPECT_EQ(t.result.exit_code, 2) << t.result.output;
  EXPECT_NE(t.result.output.find("strategy 'counting_role_disagrees' (SDK 1.8): its role() says rank 0 does not "
                                 "compute"),
            std::string::npos)
      << t.result.output;
}

}  // namespace
}  // namespace gradsweep
