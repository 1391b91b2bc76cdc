// Every YAML feature in a cell file, an experiment file or a --set value gets an answer within seconds
// (issue 27): accepted with a defined meaning, or refused with file:line:column (config/yaml_guard.hpp).
// Before, a recursive alias crashed gradsweep with SIGSEGV and an alias bomb kept it busy for ever.
#include "config/cell_config.hpp"
#include "config/yaml_guard.hpp"
#include "experiment/plan/experiment_file.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>

namespace gradsweep {
namespace {
namespace fs = std::filesystem;
using config::ConfigError;

constexpr double kAnswerWithin = 5.0;  // seconds, on a loaded 2-core CI machine

const std::string kCellHead =
    "model: {name: gpt2, preset: gpt2-tiny}\n"
    "data: {train: /d/train.bin, val: /d/val.bin}\n";
const std::string kTrain = "train: {steps: 2, batch_size: 2, seq_len: 16}\n";

// The problems `parse` throws (empty: accepted), failing the test if it takes longer than kAnswerWithin.
std::string answer(const std::function<void()>& parse) {
  const auto start = std::chrono::steady_clock::now();
  std::string problems;
  try {
    parse();
  } catch (const ConfigError& e) {
    problems = e.what();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, kAnswerWithin) << problems;
  return problems;
}

std::string cell(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return answer([&] { config::parse_cell_config(text, "c.yaml", "/base", overrides); });
}

// Through the experiment parser, as `gradsweep plan` and `run` read a file.
std::string experiment(const std::string& text) {
  const fs::path file = test::scratch_dir("yaml") / "exp.yaml";
  test::write_text(file, text);
  return answer([&] {
    const experiment::ExperimentFile exp = experiment::load_experiment_file(file, {});
    exp.reread();
  });
}

#define EXPECT_HAS(text, fragment) EXPECT_NE((text).find(fragment), std::string::npos) << (text)

// 9 levels of 9 aliases each: 9^9 nodes once copied.
std::string alias_bomb() {
  std::string text = "a0: &a0 [lol]\n";
  for (int level = 1; level < 10; ++level) {
    text += "a" + std::to_string(level) + ": &a" + std::to_string(level) + " [";
    for (int i = 0; i < 9; ++i) text += std::string(i ? ", " : "") + "*a" + std::to_string(level - 1);
    text += "]\n";
  }
  return text;
}

TEST(YamlFeatures, AliasIsACopyThatEditsNothingElse) {
  const YAML::Node root = config::parse_config_yaml(
      "base: &b {name: ps, mode: async, inner: &i [1, 2]}\n"
      "include: [{strategy: *b}, {strategy: *b, extra: *i}]\n",
      "x.yaml");
  YAML::Node first = root["include"][0]["strategy"];
  first["mode"] = "sync";
  first["inner"][0] = 7;
  EXPECT_EQ(root["include"][1]["strategy"]["mode"].as<std::string>(), "async");
  EXPECT_EQ(root["base"]["mode"].as<std::string>(), "async");
  EXPECT_EQ(root["base"]["inner"][0].as<int>(), 1);
  EXPECT_EQ(root["include"][1]["extra"][1].as<int>(), 2);
  // The anchor's own place keeps its position; copies have none (yaml-cpp cannot give a new node one).
  EXPECT_EQ(root["base"].Mark().line, 0);
  EXPECT_TRUE(root["include"][0]["strategy"].Mark().is_null());
  // Also when the alias is nearer the top than its anchor.
  const YAML::Node nested = config::parse_config_yaml("a: {inner: &x {k: 1}}\nb: *x\n", "x.yaml");
  EXPECT_EQ(nested["a"]["inner"].Mark().line, 0);
  EXPECT_TRUE(nested["b"].Mark().is_null());
}

TEST(YamlFeatures, CellAcceptsAliasesAsCopies) {
  EXPECT_EQ(cell("model: {name: gpt2, preset: gpt2-tiny}\n"
                 "data: {train: &p [/d/a.bin, /d/b.bin], val: *p}\n" +
                 kTrain),
            "");
  const auto c = config::parse_cell_config("model: {name: gpt2}\ndata: {train: &p [/d/a.bin], val: *p}\n" + kTrain,
                                           "c.yaml", "/base", {"data.val=[/d/v.bin]"});
  EXPECT_EQ(c.train_data, std::vector<fs::path>{"/d/a.bin"});
  EXPECT_EQ(c.val_data, std::vector<fs::path>{"/d/v.bin"});
  // A value refused inside a copy is named by its key.
  const std::string p = cell(kCellHead + "train: {steps: &n 0, batch_size: *n, seq_len: 16}\n");
  EXPECT_HAS(p, "c.yaml:3:16: train.steps:");
  EXPECT_HAS(p, "c.yaml: train.batch_size:");
}

TEST(YamlFeatures, RecursiveAliasesAreRefusedAtTheAnchor) {
  EXPECT_HAS(cell(kCellHead + "train: &x [*x]\n"), "c.yaml:3:8: anchor &x is used inside its own node (alias at 3:12)");
  EXPECT_HAS(cell(kCellHead + "train: &x {a: *x}\n"), "c.yaml:3:8: anchor &x is used inside its own node");
  EXPECT_HAS(cell("model: &m {name: gpt2, deep: {deeper: [*m]}}\n"), "c.yaml:1:8: anchor &m is used inside");
  EXPECT_HAS(experiment("matrix: &m {strategy: [single, *m]}\n"), "exp.yaml:1:9: anchor &m is used inside");
  EXPECT_HAS(cell(kCellHead + kTrain, {"train.x=&y [*y]"}), "--set train.x:1:1: anchor &y is used inside");
}

TEST(YamlFeatures, AliasBombIsRefusedAtOnce) {
  EXPECT_HAS(cell(alias_bomb()), "c.yaml:6:40: the document grows past 100000 nodes here");
  EXPECT_HAS(experiment(alias_bomb()), "exp.yaml:6:40: the document grows past 100000 nodes here");
  // Few nodes, much text: a 1 MiB scalar copied 17 times.
  std::string copies = "l: [*s";
  for (int i = 0; i < 16; ++i) copies += ", *s";
  EXPECT_HAS(cell("s: &s " + std::string(1 << 20, 'x') + "\n" + copies + "]\n"), "grows past 16 MiB");
}

TEST(YamlFeatures, MergeKeysAreRefused) {
  EXPECT_HAS(cell(kCellHead + "base: &b {steps: 2, batch_size: 2}\ntrain:\n  <<: *b\n  seq_len: 16\n"),
             "c.yaml:5:3: merge keys (<<) are not supported");
  // What would be a duplicate key through a merge is refused as a merge.
  EXPECT_HAS(experiment("b: &b {steps: 2}\ntrain: {<<: *b, steps: 3}\n"), "exp.yaml:2:9: merge keys (<<)");
}

TEST(YamlFeatures, CoreTagsChangeNothingOthersAreRefused) {
  EXPECT_EQ(cell(kCellHead + "train: !!map {steps: !!int 2, batch_size: !!str 2, seq_len: 16}\n"), "");
  EXPECT_HAS(cell(kCellHead + "train: {steps: !custom 2, batch_size: 2, seq_len: 16}\n"),
             "c.yaml:3:16: tag !custom is not supported");
  EXPECT_HAS(cell(kCellHead + "train: !!binary aGVsbG8=\n"), "c.yaml:3:8: tag !!binary is not supported");
  EXPECT_HAS(cell(kCellHead + "train: !!seq {steps: 2}\n"), "c.yaml:3:8: tag !!seq on a mapping");
  EXPECT_HAS(experiment("name: !!map x\n"), "exp.yaml:1:7: tag !!map on a scalar");
}

TEST(YamlFeatures, DeepNestingIsRefused) {
  EXPECT_HAS(cell("train: " + std::string(10000, '[') + std::string(10000, ']') + "\n"),
             "c.yaml:1:71: nested deeper than 64 levels");
  std::string block;
  for (int i = 0; i < 1000; ++i) block += std::string(i, ' ') + "k" + std::to_string(i) + ":\n";
  EXPECT_HAS(experiment(block), "exp.yaml:65:65: nested deeper than 64 levels");
  // An alias counts with the depth of the node it copies.
  EXPECT_HAS(cell("a: &a " + std::string(40, '[') + std::string(40, ']') + "\nb: " + std::string(30, '[') + "*a" +
                  std::string(30, ']') + "\n"),
             "c.yaml:2:34: alias *a nests deeper than 64 levels");
}

TEST(YamlFeatures, HugeScalarsAndTextsAreRefused) {
  EXPECT_HAS(cell("model: {name: gpt2, preset: \"" + std::string(100 << 20, 'x') + "\"}\n"),
             "c.yaml:1:4194305: the text is larger than 4 MiB");
  EXPECT_HAS(experiment("description: " + std::string(2 << 20, 'x') + "\n"),
             "exp.yaml:1:14: a scalar of 2097152 bytes; at most 1 MiB");
  EXPECT_HAS(cell(kCellHead + kTrain, {"model.preset=" + std::string(2 << 20, 'x')}),
             "--set model.preset:1:1: a scalar of 2097152 bytes");
}

TEST(YamlFeatures, KeysAreNames) {
  EXPECT_HAS(cell(kCellHead + "? [train, eval]\n: {steps: 2}\n"), "c.yaml:3:3: a key must be a name, not a list");
  EXPECT_HAS(cell(kCellHead + "~: 1\n"), "c.yaml:3:1: a key must be a name, not null");
  EXPECT_HAS(experiment("k: &k {a: 1}\nmatrix: {*k : [1, 2]}\n"), "exp.yaml:2:10: a key must be a name, not an alias");
  // An alias of a name is a name: here a duplicate key, refused as one.
  EXPECT_HAS(cell("model: {name: gpt2, preset: &p preset, *p : x}\n"), "model.preset: duplicate key");
}

TEST(YamlFeatures, OneDocumentPerFile) {
  EXPECT_HAS(cell(kCellHead + kTrain + "---\nmodel: {name: llama}\n"), "c.yaml:4:1: a second YAML document ('---')");
  EXPECT_EQ(cell("---\n" + kCellHead + kTrain + "...\n"), "");
}

// The real binary: a recursive alias used to end `gradsweep plan` and `train --dry-run`-free validation
// with SIGSEGV (exit 139); now both exit 2 with the position.
TEST(YamlFeatures, CliAnswersRecursiveAliasWithExitTwo) {
  const fs::path dir = test::scratch_dir("yaml-cli");
  test::write_text(dir / "exp.yaml", kCellHead + "train: &x {steps: [*x]}\n");
  const auto plan = test::run_command("timeout 20 " + test::gradsweep_binary().string() + " plan " +
                                      (dir / "exp.yaml").string() + " --out " + (dir / "out").string());
  EXPECT_EQ(plan.exit_code, 2) << plan.output;
  EXPECT_HAS(plan.output, "exp.yaml:3:8: anchor &x is used inside its own node");
  const auto train = test::run_command("timeout 20 " + test::gradsweep_binary().string() + " train " +
                                       (dir / "exp.yaml").string() + " --out " + (dir / "cell").string());
  EXPECT_EQ(train.exit_code, 2) << train.output;
  EXPECT_HAS(train.output, "exp.yaml:3:8: anchor &x is used inside its own node");
}

}  // namespace
}  // namespace gradsweep
