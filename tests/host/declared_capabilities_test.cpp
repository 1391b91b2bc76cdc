// SDK 1.4's declarations (sdk/capabilities.hpp) as the host reads them: appended descriptor fields read
// only where the plugin's SDK had them, the shared plan check, and a plugin built as SDK 1.2 trained with
// the old behaviour next to one that declares it does not restrict the vocabulary.
#include "plugins/plugin_declarations.hpp"
#include "plugins/plugin_registry.hpp"
#include "support/test_support.hpp"
#include "tiny_cell.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>

#include <fstream>

namespace gradsweep {
namespace {

using plugins::PluginRegistry;
using sdk::PluginKind;
namespace fs = std::filesystem;

const fs::path kCounting = GRADSWEEP_TEST_COUNTING_DIR;

sdk::PlanFacts facts_for(int world, const sdk::Options& options, const char* backend, sdk::CommFeatures features) {
  sdk::PlanFacts facts;
  facts.world_size = world;
  facts.ranks_per_node = world;
  facts.options = &options;
  facts.backend = backend;
  facts.backend_features = features;
  return facts;
}

TEST(DeclaredCapabilities, InTreeStrategiesDeclareThemAndTheirChoices) {
  PluginRegistry registry;
  registry.scan({test::plugin_dir()});
  const plugins::PluginRecord& ring = registry.find(PluginKind::Strategy, "ring");
  const std::optional<sdk::StrategyCapabilities> caps = plugins::declared_capabilities(ring);
  ASSERT_TRUE(caps);
  EXPECT_TRUE(caps->synchronous_exact);
  EXPECT_TRUE(caps->ranks_agree);
  EXPECT_FALSE(caps->restricts_vocabulary);
  const auto specs = plugins::option_specs(ring);
  const auto choices = plugins::option_choices(ring);
  ASSERT_EQ(specs.size(), choices.size());
  EXPECT_EQ(std::string(specs[0].key), "algorithm");
  EXPECT_EQ(choices[0], "auto|ring|native|hierarchical");
  EXPECT_EQ(std::string(specs[0].default_value), "auto");
  EXPECT_FALSE(plugins::declared_capabilities(registry.find(PluginKind::Strategy, "ring-amp"))->synchronous_exact);
  EXPECT_TRUE(plugins::declared_capabilities(registry.find(PluginKind::Strategy, "sampled"))->restricts_vocabulary);
  for (const char* name : {"single", "ring", "ring-amp", "dps", "dps-amp", "ps", "ps-amp", "sampled"})
    EXPECT_TRUE(plugins::declared_capabilities(registry.find(PluginKind::Strategy, name))) << name;
}

TEST(DeclaredCapabilities, AnOlderCapabilitiesStructIsReadOnlyAsFarAsItsSize) {
  PluginRegistry registry;
  registry.scan({test::plugin_dir()});
  sdk::PluginDescriptor descriptor = *registry.find(PluginKind::Strategy, "ring").descriptor;
  // 1.4's struct ends at `devices`; what follows it in the plugin's memory is not the plugin's to say.
  constexpr std::size_t kSize14 = offsetof(sdk::StrategyCapabilities, devices) + sizeof(sdk::DeviceKinds);
  alignas(sdk::StrategyCapabilities) unsigned char memory[2 * sizeof(sdk::StrategyCapabilities)];
  std::memset(memory, 0xff, sizeof memory);
  sdk::StrategyCapabilities declared = sdk::StrategyCapabilities{}.ranks(2, 0).exact();
  declared.struct_size = kSize14;
  std::memcpy(memory, &declared, kSize14);
  descriptor.capabilities = reinterpret_cast<const sdk::StrategyCapabilities*>(memory);
  descriptor.abi_minor = 4;  // a 1.4 plugin: its struct is 1.4's size
  plugins::PluginRecord record{"old", PluginKind::Strategy, "1", "", "old.so", &descriptor};
  const auto caps = plugins::declared_capabilities(record);
  ASSERT_TRUE(caps);
  EXPECT_EQ(caps->min_ranks, 2u);
  EXPECT_TRUE(caps->synchronous_exact);
  EXPECT_FALSE(caps->reshards);  // 1.7's field: its default, not the 0xff beyond the plugin's struct
}

TEST(DeclaredCapabilities, FieldsBeyondTheDescriptorsSizeAreNeverRead) {
  PluginRegistry registry;
  registry.scan({test::plugin_dir()});
  // A 1.3 descriptor: the appended fields hold garbage that must not be followed.
  sdk::PluginDescriptor cut = *registry.find(PluginKind::Strategy, "ring").descriptor;
  cut.abi_minor = 3;
  cut.struct_size = offsetof(sdk::PluginDescriptor, capabilities);
  cut.capabilities = reinterpret_cast<const sdk::StrategyCapabilities*>(0x1);
  cut.option_choices = reinterpret_cast<const char* const*>(0x1);
  cut.check_plan = nullptr;
  plugins::PluginRecord record{"cut", PluginKind::Strategy, "1", "", "cut.so", &cut};
  EXPECT_FALSE(plugins::declared_capabilities(record));
  for (const auto& c : plugins::option_choices(record)) EXPECT_EQ(c, "");
  // The same fields within its struct_size but past what its minor has: ignored too.
  cut.struct_size = sizeof(sdk::PluginDescriptor);
  EXPECT_FALSE(plugins::declared_capabilities(record));
  // A descriptor claiming 1.9 but cut to 1.3's size: an error naming the plugin, never garbage followed.
  cut.abi_minor = 9;
  cut.struct_size = offsetof(sdk::PluginDescriptor, capabilities);
  try {
    (void)plugins::declared_capabilities(record);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("strategy 'cut': its PluginDescriptor is"), std::string::npos) << e.what();
  }
}

TEST(DeclaredCapabilities, SingleOnTwoRanksIsRefusedInItsOwnWords) {
  PluginRegistry registry;
  registry.scan({test::plugin_dir()});
  const sdk::Options options(std::map<std::string, sdk::Options::Value>{{"precision", std::string("fp32")}});
  const auto verdict =
      plugins::check_strategy_plan(registry.find(PluginKind::Strategy, "single"), facts_for(2, options, "mpi", ~0ull));
  EXPECT_EQ(verdict.refusal,
            "strategy 'single' runs on one rank, but the job has 2 (nodes x ranks_per_node = 1 x 2); "
            "pick a data-parallel strategy (ps, dps, ring) for more");
  EXPECT_EQ(plugins::refusal_key(verdict, 1), "launcher.ranks_per_node");
  const plugins::PluginRecord& single = registry.find(PluginKind::Strategy, "single");
  EXPECT_EQ(plugins::check_strategy_plan(single, facts_for(1, options, "local", ~0ull)).refusal, "");
}

TEST(DeclaredCapabilities, WhatTheBackendLacksIsRefusedAndAServerThatServesDoesNotCompute) {
  PluginRegistry registry;
  registry.scan({test::plugin_dir()});
  const sdk::CommFeatures nccl = sdk::kPointToPoint | sdk::kAsyncCollectives;
  const sdk::Options ring_options(std::map<std::string, sdk::Options::Value>{{"algorithm", std::string("ring")}});
  const auto ring = plugins::check_strategy_plan(registry.find(PluginKind::Strategy, "ring"),
                                                 facts_for(2, ring_options, "nccl", nccl));
  EXPECT_NE(ring.refusal.find("algorithm ring is gradsweep's own allreduce over point-to-point, which the nccl "
                              "backend does not offer on 2 ranks; use algorithm: native"),
            std::string::npos)
      << ring.refusal;
  EXPECT_EQ(plugins::refusal_key(ring, 1), "strategy.algorithm");
  // The default, auto, is the backend's own allreduce there: accepted.
  const sdk::Options auto_options(std::map<std::string, sdk::Options::Value>{{"algorithm", std::string("auto")}});
  EXPECT_EQ(plugins::check_strategy_plan(registry.find(PluginKind::Strategy, "ring"),
                                         facts_for(2, auto_options, "nccl", nccl))
                .refusal,
            "");

  const sdk::Options ps_async(
      std::map<std::string, sdk::Options::Value>{{"mode", std::string("async")}, {"server_computes", false}});
  const plugins::PluginRecord& ps = registry.find(PluginKind::Strategy, "ps");
  const auto on_nccl = plugins::check_strategy_plan(ps, facts_for(3, ps_async, "nccl", nccl));
  EXPECT_NE(on_nccl.refusal.find("mode async serves gradients in the order they arrive (recv_any)"), std::string::npos);
  const auto on_mpi = plugins::check_strategy_plan(ps, facts_for(3, ps_async, "mpi", ~0ull));
  EXPECT_EQ(on_mpi.refusal, "");
  EXPECT_EQ(on_mpi.computing_ranks, 2);
  ASSERT_TRUE(on_mpi.capabilities);
  EXPECT_FALSE(on_mpi.capabilities->synchronous_exact);  // narrowed for mode async
  EXPECT_FALSE(on_mpi.capabilities->deterministic);      // updates land in the order gradients arrive
  EXPECT_TRUE(on_mpi.answered);
  const sdk::Options ps_sync(
      std::map<std::string, sdk::Options::Value>{{"mode", std::string("sync")}, {"server_computes", true}});
  const auto sync = plugins::check_strategy_plan(ps, facts_for(3, ps_sync, "mpi", ~0ull));
  ASSERT_TRUE(sync.capabilities);
  EXPECT_TRUE(sync.capabilities->deterministic);
  // Units are declared now, not answered by RankRole.
  EXPECT_TRUE(plugins::declared_capabilities(registry.find(PluginKind::Strategy, "fsdp"))->unit_events);
  EXPECT_FALSE(plugins::declared_capabilities(registry.find(PluginKind::Strategy, "ring"))->unit_events);
}

TEST(DeclaredCapabilities, APluginBuiltAsSdk12DeclaresNothingAndKeepsTheOldBehaviour) {
  PluginRegistry registry;
  registry.scan({kCounting});
  ASSERT_TRUE(registry.refused().empty()) << registry.refused().front().reason;
  const plugins::PluginRecord& old = registry.find(PluginKind::Strategy, "counting_sdk_1_2");
  EXPECT_EQ(old.descriptor->abi_minor, 2u);
  EXPECT_LT(old.descriptor->struct_size, sizeof(sdk::PluginDescriptor));
  EXPECT_FALSE(plugins::declared_capabilities(old));
  const sdk::Options none;
  const auto verdict = plugins::check_strategy_plan(old, facts_for(2, none, "mpi", ~0ull));
  EXPECT_EQ(verdict.refusal, "");
  EXPECT_EQ(verdict.computing_ranks, 2);
  EXPECT_TRUE(plugins::asks_for_vocabulary(old, verdict));
  const plugins::PluginRecord& declared = registry.find(PluginKind::Strategy, "counting_sdk_1_4");
  const auto declared_verdict = plugins::check_strategy_plan(declared, facts_for(1, none, "local", ~0ull));
  EXPECT_FALSE(plugins::asks_for_vocabulary(declared, declared_verdict));
}

// The step records' "plugin" scalars of a `gradsweep train` run of the counting strategy `name`.
std::vector<nlohmann::json> train_counting(const std::string& name) {
  const fs::path dir = test::scratch_dir(name);
  const fs::path cell = test::write_tiny_cell(
      dir, 3,
      "strategy: {name: " + name + "}\nplugins: {paths: [" + kCounting.string() + "]}\nmetrics: {peak_flops: 1e11}\n");
  const auto r = test::run_command(
      "timeout 120 " + test::gradsweep_command("train " + cell.string() + " --out " + (dir / "out").string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::vector<nlohmann::json> plugin;
  std::ifstream in(dir / "out" / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) plugin.push_back(nlohmann::json::parse(line).at("plugin"));
  return plugin;
}

TEST(DeclaredCapabilities, TheTrainerAsksForTheVocabularyOnlyWhereItIsRestricted) {
  // Built as SDK 1.2: asked every step and handed the token counts, as every 1.2 plugin was.
  const auto old = train_counting("counting_sdk_1_2");
  ASSERT_EQ(old.size(), 3u);
  for (std::size_t step = 0; step < old.size(); ++step) {
    EXPECT_EQ(old[step].at("vocabulary_calls").get<double>(), static_cast<double>(step + 1));
    EXPECT_EQ(old[step].at("token_counts").get<double>(), 1.0);
  }
  // Declaring restricts_vocabulary = false: never asked, no counts.
  const auto declared = train_counting("counting_sdk_1_4");
  ASSERT_EQ(declared.size(), 3u);
  for (const auto& step : declared) {
    EXPECT_EQ(step.at("vocabulary_calls").get<double>(), 0.0);
    EXPECT_EQ(step.at("token_counts").get<double>(), 0.0);
  }
}

}  // namespace
}  // namespace gradsweep
