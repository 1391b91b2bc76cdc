// What the conformance kit reads from a strategy's declarations before it runs a job: a strategy whose
// capabilities (as narrowed for its options) say it is not deterministic is not held to two equal runs;
// `ps` in mode async says so.
#include "conformance/repeat_properties.hpp"
#include "plugins/plugin_declarations.hpp"
#include "plugins/plugin_registry.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>

namespace gradsweep {
namespace {

TEST(KitDeclarations, NotDeclaredDeterministicIsSkippedWithoutASecondJob) {
  conformance::KitContext ctx;  // no workspace: a job run here would fail, and fail the property
  ctx.plans = {{2, "", sdk::StrategyCapabilities{}.deterministic_runs(false)}};
  conformance::JobRun first;
  first.ranks = 2;
  const conformance::Finding f = conformance::check_determinism(ctx, first);
  EXPECT_EQ(f.verdict, conformance::Verdict::Skip) << f.reason;
  EXPECT_NE(f.reason.find("not declared deterministic"), std::string::npos) << f.reason;
}

TEST(KitDeclarations, PsInModeAsyncIsNotDeclaredDeterministic) {
  plugins::PluginRegistry registry;
  registry.scan({test::plugin_dir()});
  const sdk::Options async(
      std::map<std::string, sdk::Options::Value>{{"mode", std::string("async")}, {"server_computes", false}});
  sdk::PlanFacts facts;
  facts.world_size = 3;
  facts.ranks_per_node = 3;
  facts.options = &async;
  facts.backend = "mpi";
  facts.backend_features = ~0ull;
  const plugins::PlanVerdict verdict =
      plugins::check_strategy_plan(registry.find(sdk::PluginKind::Strategy, "ps"), facts);
  ASSERT_EQ(verdict.refusal, "");
  ASSERT_TRUE(verdict.capabilities);
  EXPECT_FALSE(verdict.capabilities->deterministic);
}

}  // namespace
}  // namespace gradsweep
