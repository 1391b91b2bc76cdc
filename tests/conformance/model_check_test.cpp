// `gradsweep check model` through the real CLI: every in-tree model passes every check with its dropout
// on (the check sets `dropout`, which each declares); a careless model (tests/conformance/plugins) fails
// exactly the checks it breaks, and the output and the exit status name them.
#include "support/test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;

struct ModelCheck {
  CommandResult result;  // stderr: what the plugin logs
  nlohmann::json report;
  std::string table;
};

// The check twice: as JSON (the findings) and as the table a person reads.
ModelCheck check_model(const std::string& model, const std::string& args) {
  const fs::path dir = scratch_dir("check-model-" + model);
  const std::string command =
      gradsweep_binary().string() + " check model " + model + " --path " GRADSWEEP_TEST_MODEL_CHECK_PLUGINS " " + args;
  ModelCheck c;
  c.result = run_command("{ timeout -k 5 240 " + command + " --json > " + (dir / "report.json").string() + "; }");
  c.report = nlohmann::json::parse(read_text(dir / "report.json"), nullptr, false);
  c.table = run_command("timeout -k 5 240 " + command + " 2>/dev/null").output;
  return c;
}

nlohmann::json finding(const nlohmann::json& report, const std::string& check) {
  for (const auto& f : report["findings"])
    if (f["check"] == check) return f;
  return nullptr;
}

const char* const kChecks[] = {"parameters",    "parameter count", "units",         "flops per token", "initial loss",
                               "output subset", "deterministic",   "dropout split", "save/load"};

struct Model {
  const char* name;
  const char* args;
};
// Its name in ctest's test names (not the struct's bytes, which hold pointers).
void PrintTo(const Model& m, std::ostream* out) { *out << m.name; }

class ModelCheckPasses : public ::testing::TestWithParam<Model> {};

TEST_P(ModelCheckPasses, EveryCheckPassesWithDropoutOn) {
  const ModelCheck c = check_model(GetParam().name, GetParam().args);
  ASSERT_TRUE(c.report.is_object()) << c.result.output;
  EXPECT_EQ(c.result.exit_code, 0) << c.report.dump(1) << c.result.output;
  EXPECT_TRUE(c.report["passed"].get<bool>()) << c.report.dump(1);
  for (const char* check : kChecks) EXPECT_EQ(finding(c.report, check)["verdict"], "PASS") << check << c.report.dump(1);
  // The dropout was on, so the split was really compared, and the units were really declared and hooked.
  EXPECT_EQ(c.report["options"].back(), "model.dropout=0.1") << c.report.dump(1);
  EXPECT_NE(finding(c.report, "dropout split")["figure"].get<std::string>().find("two halves"), std::string::npos)
      << c.report.dump(1);
  EXPECT_NE(finding(c.report, "units")["figure"].get<std::string>().find("hooks called in order"), std::string::npos)
      << c.report.dump(1);
  EXPECT_NE(c.table.find("PASSED: 9 checks"), std::string::npos) << c.table;
}

INSTANTIATE_TEST_SUITE_P(Models, ModelCheckPasses,
                         ::testing::Values(Model{"gpt2", "--set model.preset=gpt2-tiny"},
                                           Model{"llama", "--set model.preset=llama-tiny"},
                                           Model{"lstm_lm", "--set model.preset=lstm-tiny --set model.n_layer=2"}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ModelCheckFails, NamesEachBrokenCheck) {
  const ModelCheck c = check_model("careless_model", "");
  EXPECT_EQ(c.result.exit_code, 1) << c.result.output;
  ASSERT_TRUE(c.report.is_object()) << c.result.output;
  EXPECT_EQ(c.report["failed"], nlohmann::json({"parameter count", "dropout split"})) << c.report.dump(1);
  EXPECT_NE(finding(c.report, "parameter count")["figure"].get<std::string>().find("declared 2049, counted 2048"),
            std::string::npos)
      << c.report.dump(1);
  EXPECT_NE(finding(c.report, "dropout split")["reason"].get<std::string>().find("sdk::SampleDropout"),
            std::string::npos)
      << c.report.dump(1);
  // What it keeps right still passes: the seed is the host's, the checkpoint round trip is whole.
  for (const char* check : {"deterministic", "save/load", "parameters", "initial loss"})
    EXPECT_EQ(finding(c.report, check)["verdict"], "PASS") << check << c.report.dump(1);
  EXPECT_NE(c.table.find("FAILED: 2 of 9 checks: parameter count, dropout split"), std::string::npos) << c.table;
}

TEST(ModelCheckFails, WithoutDropoutTheSplitIsNotApplicable) {
  // --dropout-key "": the check sets nothing, and the careless model's dropout defaults to 0.
  const ModelCheck c = check_model("careless_model", "--dropout-key ''");
  ASSERT_TRUE(c.report.is_object()) << c.result.output;
  const nlohmann::json split = finding(c.report, "dropout split");
  EXPECT_EQ(split["verdict"], "PASS") << c.report.dump(1);
  EXPECT_NE(split["figure"].get<std::string>().find("not applicable"), std::string::npos) << split.dump();
  EXPECT_EQ(c.report["failed"], nlohmann::json({"parameter count"})) << c.report.dump(1);
}

TEST(ModelCheckRefuses, UnknownModelAndForeignOptions) {
  const auto unknown = run_command(gradsweep_binary().string() + " check model no_such_model 2>&1");
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.output.find("no model plugin 'no_such_model'; found: "), std::string::npos) << unknown.output;
  const auto foreign = run_command(gradsweep_binary().string() + " check model gpt2 --set strategy.mode=async 2>&1");
  EXPECT_NE(foreign.exit_code, 0);
  EXPECT_NE(foreign.output.find("model.KEY=VALUE"), std::string::npos) << foreign.output;
  const auto wrong = run_command(gradsweep_binary().string() +
                                 " check model gpt2 --set model.preset=gpt2-tiny "
                                 "--set model.n_layer=two 2>&1");
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_NE(wrong.output.find("model.n_layer"), std::string::npos) << wrong.output;
}

}  // namespace
}  // namespace gradsweep::test
