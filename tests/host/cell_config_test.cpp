// Cell configuration: defaults, types, unknown keys with file:line:column, all problems at once.
#include "config/cell_config.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace gradsweep {
namespace {

using config::CellConfig;
using config::ConfigError;
using config::Diagnostics;
using config::host_keys_of;
using config::OptionChoices;
using config::parse_cell_config;
using config::resolve_options;

const char* kValid = R"(model:
  name: gpt2
  preset: gpt2-tiny
data:
  train: d/train.bin
  val: /abs/val.bin
train:
  steps: 10
  batch_size: 8
  seq_len: 32
  lr: 1e-3
)";

std::vector<std::string> problems_of(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  try {
    parse_cell_config(yaml, "exp.yaml", "/base", overrides);
  } catch (const ConfigError& e) {
    return e.problems();
  }
  return {};
}

TEST(CellConfig, ValidFileGetsDefaultsAndResolvedPaths) {
  const auto c = parse_cell_config(kValid, "exp.yaml", "/base");
  EXPECT_EQ(c.model_name, "gpt2");
  EXPECT_EQ(c.strategy_name, "single");  // the default strategy
  EXPECT_EQ(c.train_data, std::vector<std::filesystem::path>{"/base/d/train.bin"});
  EXPECT_EQ(c.val_data, std::vector<std::filesystem::path>{"/abs/val.bin"});
  EXPECT_EQ(c.train.steps, 10);
  EXPECT_DOUBLE_EQ(c.train.optimizer.lr, 1e-3);
  EXPECT_DOUBLE_EQ(c.train.optimizer.beta2, 0.95);
  EXPECT_EQ(c.train.optimizer.kind, sdk::OptimizerSpec::Kind::AdamW);
  EXPECT_EQ(c.resolved["train"]["grad_clip"].as<double>(), 1.0);
}

// A split may be a list of shards, directories and globs: each resolved against the file's directory, in
// list order; anything else than a list of paths is refused at its position.
TEST(CellConfig, DataSplitsMayBeListsOfPaths) {
  const auto c = parse_cell_config(kValid, "exp.yaml", "/base", {"data.train=[d/a.bin, /x/shards, d/b_*.bin]"});
  EXPECT_EQ(c.train_data, (std::vector<std::filesystem::path>{"/base/d/a.bin", "/x/shards", "/base/d/b_*.bin"}));
  EXPECT_EQ(c.resolved["data"]["train"].size(), 3u);
  std::string all;
  for (const auto& p : problems_of(kValid, {"data.val=[[a.bin]]"})) all += p + "\n";
  EXPECT_NE(all.find("data.val: expected a string"), std::string::npos) << all;
}

TEST(CellConfig, UnknownKeyNamesKeyFileLineAndSuggestion) {
  std::string yaml = kValid;
  yaml += "  warmup_stpes: 5\n";
  const auto problems = problems_of(yaml);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("exp.yaml:12:3: train.warmup_stpes: unknown key"), std::string::npos) << problems[0];
  EXPECT_NE(problems[0].find("did you mean 'warmup_steps'"), std::string::npos) << problems[0];
}

TEST(CellConfig, ReportsEveryProblemAtOnce) {
  const auto problems = problems_of(R"(model: {name: gpt2}
data: {train: a.bin}
train:
  steps: many
  batch_size: 8
  seq_len: -4
evaluation: {every: 3}
)");
  std::string all;
  for (const auto& p : problems) all += p + "\n";
  EXPECT_NE(all.find("exp.yaml:4:10: train.steps: expected an integer, got 'many'"), std::string::npos) << all;
  EXPECT_NE(all.find("data.val: required key missing"), std::string::npos) << all;
  EXPECT_NE(all.find("exp.yaml:7:1: evaluation: unknown section"), std::string::npos) << all;
  EXPECT_GE(problems.size(), 3u) << all;
}

TEST(CellConfig, SemanticChecksAfterTypes) {
  const auto problems = problems_of(kValid, {"train.seq_len=0", "runtime.device=tpu"});
  std::string all;
  for (const auto& p : problems) all += p + "\n";
  EXPECT_NE(all.find("train.seq_len: must be in [1, 1048576], got 0"), std::string::npos) << all;
  EXPECT_NE(all.find("runtime.device: expected cpu, cuda or cuda:N"), std::string::npos) << all;
}

TEST(CellConfig, Tf32IsOnForCudaByDefaultAndRefusedOnCpuNamingTheKey) {
  EXPECT_FALSE(parse_cell_config(kValid, "exp.yaml", "/base").tf32);
  const auto cuda = parse_cell_config(kValid, "exp.yaml", "/base", {"runtime.device=cuda:0"});
  EXPECT_TRUE(cuda.tf32);
  EXPECT_EQ(cuda.resolved["runtime"]["tf32"].as<std::string>(), "on");
  EXPECT_FALSE(parse_cell_config(kValid, "exp.yaml", "/base", {"runtime.device=cuda", "runtime.tf32=off"}).tf32);
  std::string yaml = kValid;
  yaml += "runtime:\n  tf32: on\n";
  const auto problems = problems_of(yaml);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("exp.yaml:13:9: runtime.tf32: on needs a CUDA device, and runtime.device is cpu"),
            std::string::npos)
      << problems[0];
}

TEST(CellConfig, OverridesApplyAndCreateSections) {
  const auto c =
      parse_cell_config(kValid, "exp.yaml", "/base", {"train.lr=5e-4", "strategy.name=ring", "eval.every=7"});
  EXPECT_DOUBLE_EQ(c.train.optimizer.lr, 5e-4);
  EXPECT_EQ(c.strategy_name, "ring");
  EXPECT_EQ(c.eval_every, 7);
  EXPECT_THROW(parse_cell_config(kValid, "exp.yaml", "/base", {"no-equals-sign"}), std::runtime_error);
}

TEST(CellConfig, PluginOptionsValidatedAgainstTheirSchema) {
  const auto c = parse_cell_config(kValid, "exp.yaml", "/base", {"model.n_layer=two"});
  const std::vector<sdk::OptionSpec> specs{{"preset", sdk::OptionType::String, nullptr, ""},
                                           {"n_layer", sdk::OptionType::Int, nullptr, ""}};
  // What plugins::resolve_plugin_options does with a plugin's declared specs.
  const auto resolve = [&](const CellConfig& cell) {
    Diagnostics diag(cell.file);
    sdk::Options options =
        resolve_options(cell.root["model"], "model", specs, OptionChoices{}, host_keys_of("model"), diag);
    diag.throw_if_any();
    return options;
  };
  try {
    resolve(c);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("model.n_layer: expected an integer, got 'two'"), std::string::npos)
        << e.what();
  }
  const auto ok = parse_cell_config(kValid, "exp.yaml", "/base", {"model.n_layer=3"});
  const sdk::Options options = resolve(ok);
  EXPECT_EQ(options.integer("n_layer"), 3);
  EXPECT_EQ(options.text("preset"), "gpt2-tiny");
}

TEST(CellConfig, EveryHostNumberHasARange) {
  // The range lives in the schema, so a key added later gets one by construction; this keeps it so.
  for (const auto& [section, options] : config::host_options())
    for (const auto& o : options) {
      if (o.spec.type != sdk::OptionType::Int && o.spec.type != sdk::OptionType::Float) continue;
      EXPECT_TRUE(std::isfinite(o.range.min) || std::isfinite(o.range.max)) << section << "." << o.spec.key;
      if (o.spec.type == sdk::OptionType::Int) {
        EXPECT_TRUE(std::isfinite(o.range.min) && std::isfinite(o.range.max)) << section << "." << o.spec.key;
      }
    }
}

TEST(CellConfig, OutOfRangeAndNonFiniteValuesNameTheirPlace) {
  std::string yaml = kValid;
  yaml += "  warmup_steps: -1\n  beta2: 1\n  min_lr: .inf\neval: {batches: 0}\n";
  const auto problems = problems_of(yaml);
  std::string all;
  for (const auto& p : problems) all += p + "\n";
  EXPECT_NE(all.find("exp.yaml:12:17: train.warmup_steps: must be in [0, 1000000000], got -1"), std::string::npos)
      << all;
  EXPECT_NE(all.find("exp.yaml:13:10: train.beta2: must be in [0, 1), got 1"), std::string::npos) << all;
  EXPECT_NE(all.find("exp.yaml:14:11: train.min_lr: expected a finite number, got '.inf'"), std::string::npos) << all;
  EXPECT_NE(all.find("exp.yaml:15:17: eval.batches: must be in [1, 1000000], got 0"), std::string::npos) << all;
  // --set values have no place in the file, but the same check.
  const auto set = problems_of(kValid, {"train.lr=nan"});
  ASSERT_EQ(set.size(), 1u);
  EXPECT_NE(set[0].find("train.lr: expected a finite number, got 'nan'"), std::string::npos) << set[0];
}

// The host's own keys with choices go through the plugins' validator (config/option_schema check_choice):
// one message, with the key, the value, the allowed values and where the value is written.
TEST(CellConfig, HostChoicesNameKeyValueAndAllowedValues) {
  std::string yaml = kValid;
  yaml += "  optimizer: adam\nmetrics: {trace: every}\nruntime: {comm: gloo}\n";
  const auto problems = problems_of(yaml);
  std::string all;
  for (const auto& p : problems) all += p + "\n";
  EXPECT_NE(all.find("exp.yaml:12:14: train.optimizer: 'adam' is not one of adamw, sgd"), std::string::npos) << all;
  EXPECT_NE(all.find("exp.yaml:13:18: metrics.trace: 'every' is not one of sampled, all, off"), std::string::npos)
      << all;
  EXPECT_NE(all.find("exp.yaml:14:17: runtime.comm: 'gloo' is not one of auto, local, mpi, nccl"), std::string::npos)
      << all;
  EXPECT_EQ(problems.size(), 3u) << all;
  const auto sgd = parse_cell_config(kValid, "exp.yaml", "/base", {"train.optimizer=sgd"});
  EXPECT_EQ(sgd.train.optimizer.kind, sdk::OptimizerSpec::Kind::SGD);
}

TEST(CellConfig, DuplicateKeysNameBothPlaces) {
  std::string yaml = kValid;
  yaml += "  steps: 3\nmodel: {name: lstm_lm}\n";
  const auto problems = problems_of(yaml);
  std::string all;
  for (const auto& p : problems) all += p + "\n";
  EXPECT_NE(all.find("exp.yaml:12:3: train.steps: duplicate key (first at line 8:3)"), std::string::npos) << all;
  EXPECT_NE(all.find("exp.yaml:13:1: model: duplicate key (first at line 1:1)"), std::string::npos) << all;
}

TEST(CellConfig, MalformedYamlHasPosition) {
  const auto problems = problems_of("model: [unclosed\n");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].rfind("exp.yaml:", 0), 0u) << problems[0];
}

}  // namespace
}  // namespace gradsweep
