// `gradsweep check strategy` in real MPI jobs at 1, 2 and 3 ranks: every in-tree strategy and the SDK
// example pass it, each with its declarations deciding what applies; each broken fixture
// (tests/conformance/plugins) fails it on the property it breaks, with a reason that says what broke.
#include "support/test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;

struct Check {
  CommandResult result;  // the progress lines (stderr)
  nlohmann::json report;
};

Check check(const std::string& strategy, const std::string& args = "") {
  const fs::path dir = scratch_dir("check-" + strategy);
  const fs::path json = dir / "report.json";
  Check c;
  // stdout (the JSON) to a file, stderr (progress) to the captured output.
  c.result = run_command("{ GRADSWEEP_PLUGIN_PATH=" GRADSWEEP_TEST_CONFORMANCE_PLUGINS " timeout -k 5 240 " +
                         gradsweep_binary().string() + " check strategy " + strategy + " --json --keep " +
                         (dir / "work").string() + " " + args + " > " + json.string() + "; }");
  c.report = nlohmann::json::parse(read_text(json), nullptr, false);
  return c;
}

std::string findings_text(const nlohmann::json& report) {
  return report.is_object() ? report["findings"].dump(1) : "(no report)";
}

// The finding for `property` at `ranks` (0: not per rank count); null when absent.
nlohmann::json finding(const nlohmann::json& report, const std::string& property, int ranks) {
  for (const auto& f : report["findings"])
    if (f["property"] == property && f["ranks"] == ranks) return f;
  return nullptr;
}

struct Strategy {
  const char* name;
  const char* args;      // options that fit the kit's model
  bool reshards = true;  // declares it: `reshard` must pass at 2 and 4 ranks, not be skipped
};
// Its name in ctest's test names (not the struct's bytes, which hold pointers).
void PrintTo(const Strategy& s, std::ostream* out) { *out << s.name; }

class KitPasses : public ::testing::TestWithParam<Strategy> {};

TEST_P(KitPasses, EveryPropertyPassesOrIsSkippedByDeclaration) {
  const Check c = check(GetParam().name, GetParam().args);
  ASSERT_TRUE(c.report.is_object()) << c.result.output;
  EXPECT_EQ(c.result.exit_code, 0) << findings_text(c.report) << c.result.output;
  EXPECT_TRUE(c.report["passed"].get<bool>()) << findings_text(c.report);
  // Something was checked in real jobs, each property at least once, none failed.
  int passed = 0;
  for (const auto& f : c.report["findings"]) {
    EXPECT_NE(f["verdict"], "FAIL") << f.dump();
    passed += f["verdict"] == "PASS";
  }
  EXPECT_GE(passed, 3) << findings_text(c.report);
  for (const char* property : {"resume", "deterministic", "bad options", "exact (sgd)", "reshard"}) {
    bool seen = false;
    for (const auto& f : c.report["findings"]) seen = seen || f["property"] == property;
    EXPECT_TRUE(seen) << property << " missing: " << findings_text(c.report);
  }
  if (GetParam().reshards) {
    for (const int ranks : {2, 4})
      EXPECT_EQ(finding(c.report, "reshard", ranks)["verdict"], "PASS") << ranks << findings_text(c.report);
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, KitPasses,
                         ::testing::Values(Strategy{"single", "", false}, Strategy{"ps", ""}, Strategy{"ps-amp", ""},
                                           Strategy{"dps", ""}, Strategy{"dps-amp", ""}, Strategy{"ring", ""},
                                           Strategy{"ring-amp", ""},
                                           // 1024 negatives by default: more than the byte vocabulary's 257.
                                           Strategy{"sampled", "--set strategy.negatives=64"}, Strategy{"zero2", ""},
                                           Strategy{"zero2-amp", ""}, Strategy{"fsdp", ""},
                                           // One machine is one node to the kit (it plans nodes: 1, and its
                                           // 3-rank jobs could not be cut into equal nodes): hsdp runs as
                                           // fsdp over the node here; hsdp_test.cpp runs it on 2 nodes.
                                           Strategy{"hsdp", ""}, Strategy{"powersgd", ""}, Strategy{"topk", ""},
                                           Strategy{"diloco", ""}, Strategy{"periodic_average", "", false}),
                         [](const auto& info) {
                           std::string name = info.param.name;
                           for (char& ch : name)
                             if (ch == '-') ch = '_';
                           return name;
                         });

// The kit's cell with Llama as the model (--cell): the fsdp and ring strategies pass every property on it,
// fsdp over Llama's own units.
class KitPassesOnLlama : public ::testing::TestWithParam<const char*> {};

TEST_P(KitPassesOnLlama, EveryPropertyPasses) {
  const fs::path cell = scratch_dir("llama-cell-" + std::string(GetParam())) / "cell.yaml";
  write_text(cell,
             "model: {name: llama, preset: llama-tiny, vocab_size: 257, block_size: 32}\nstrategy: {name: single}\n"
             "train: {batch_size: 12, seq_len: 32, lr: 3e-3, grad_clip: 1.0, seed: 7}\neval: {batches: 2}\n"
             "metrics: {peak_flops: 1e10}\nruntime: {threads: 1}\n");
  const Check c = check(GetParam(), "--ranks 1,2 --cell " + cell.string());
  ASSERT_TRUE(c.report.is_object()) << c.result.output;
  EXPECT_EQ(c.result.exit_code, 0) << findings_text(c.report) << c.result.output;
  EXPECT_TRUE(c.report["passed"].get<bool>()) << findings_text(c.report);
  EXPECT_EQ(finding(c.report, "exact", 2)["verdict"], "PASS") << findings_text(c.report);
  EXPECT_NE(c.result.output.find("llama"), std::string::npos) << c.result.output;
}

INSTANTIATE_TEST_SUITE_P(Strategies, KitPassesOnLlama, ::testing::Values("ring", "fsdp"));

TEST(KitFails, DeclaredExactButNotExact) {
  const Check c = check("conformance_inexact", "--ranks 1,2");
  EXPECT_EQ(c.result.exit_code, 1) << c.result.output;
  ASSERT_TRUE(c.report.is_object()) << c.result.output;
  EXPECT_EQ(finding(c.report, "exact", 1)["verdict"], "PASS") << findings_text(c.report);  // one rank: single
  const nlohmann::json exact = finding(c.report, "exact", 2);
  EXPECT_EQ(exact["verdict"], "FAIL") << findings_text(c.report);
  EXPECT_NE(exact["reason"].get<std::string>().find("declared exact, but its loss differs from 'single'"),
            std::string::npos)
      << exact.dump();
  EXPECT_EQ(finding(c.report, "ranks agree", 2)["verdict"], "FAIL") << findings_text(c.report);
}

TEST(KitFails, ResumeDiffersWhenStateIsNotSaved) {
  const Check c = check("conformance_forgetful", "--ranks 2");
  EXPECT_EQ(c.result.exit_code, 1) << c.result.output;
  ASSERT_TRUE(c.report.is_object()) << c.result.output;
  const nlohmann::json resume = finding(c.report, "resume", 2);
  EXPECT_EQ(resume["verdict"], "FAIL") << findings_text(c.report);
  EXPECT_NE(
      resume["reason"].get<std::string>().find("resumed at step 4, it differs from the uninterrupted job at step"),
      std::string::npos)
      << resume.dump();
  // What it does keep right still passes.
  EXPECT_EQ(finding(c.report, "deterministic", 2)["verdict"], "PASS") << findings_text(c.report);
  EXPECT_EQ(finding(c.report, "ranks agree", 2)["verdict"], "PASS") << findings_text(c.report);
  EXPECT_EQ(finding(c.report, "bad options", 0)["verdict"], "PASS") << findings_text(c.report);
}

TEST(KitFails, SummingInsteadOfAveragingShowsUnderSgd) {
  const Check c = check("conformance_summing", "--ranks 1,2");
  EXPECT_EQ(c.result.exit_code, 1) << c.result.output;
  ASSERT_TRUE(c.report.is_object()) << c.result.output;
  // Whatever AdamW with clipping made of it, plain SGD shows the gradient twice too large.
  const nlohmann::json sgd = finding(c.report, "exact (sgd)", 2);
  EXPECT_EQ(sgd["verdict"], "FAIL") << findings_text(c.report);
  EXPECT_NE(sgd["reason"].get<std::string>().find("declared exact, but its loss differs from 'single'"),
            std::string::npos)
      << sgd.dump();
}

TEST(KitFails, ReshardFailsWhenTheOptimizersStateIsForgotten) {
  const Check c = check("conformance_careless_reshard", "--ranks 1,2");
  EXPECT_EQ(c.result.exit_code, 1) << c.result.output;
  ASSERT_TRUE(c.report.is_object()) << c.result.output;
  for (const int ranks : {2, 4}) {
    const nlohmann::json f = finding(c.report, "reshard", ranks);
    EXPECT_EQ(f["verdict"], "FAIL") << ranks << findings_text(c.report);
    EXPECT_NE(f["reason"].get<std::string>().find("resumed at " + std::to_string(ranks) + " ranks from 3"),
              std::string::npos)
        << f.dump();
  }
  // What it keeps right still passes: the same world size resumes its whole optimizer.
  EXPECT_EQ(finding(c.report, "resume", 2)["verdict"], "PASS") << findings_text(c.report);
  EXPECT_EQ(finding(c.report, "exact (sgd)", 2)["verdict"], "PASS") << findings_text(c.report);
}

TEST(KitFails, HangsWhenAnotherRankFails) {
  const Check c = check("conformance_stubborn", "--ranks 2 --hang-deadline 10");
  EXPECT_EQ(c.result.exit_code, 1) << c.result.output;
  ASSERT_TRUE(c.report.is_object()) << c.result.output;
  const nlohmann::json hang = finding(c.report, "no hang", 2);
  EXPECT_EQ(hang["verdict"], "FAIL") << findings_text(c.report);
  EXPECT_NE(hang["reason"].get<std::string>().find("a rank was left waiting"), std::string::npos) << hang.dump();
  EXPECT_EQ(finding(c.report, "exact", 2)["verdict"], "PASS") << findings_text(c.report);
  // Its jobs are all gone: the kit ended the hung one.
  const auto ps = run_command("pgrep -f '[c]heck-conformance_stubborn/work/cell.yaml' || true");
  EXPECT_EQ(ps.output, "") << ps.output;
}

}  // namespace
}  // namespace gradsweep::test
