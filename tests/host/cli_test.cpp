// The command line as a user meets it: errors that say what is wrong and where.
#include "support/test_support.hpp"

#include <gradsweep/sdk/abi.hpp>
#include <torch/version.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace gradsweep {
namespace {

namespace fs = std::filesystem;

std::string gradsweep(const std::string& args) { return test::gradsweep_binary().string() + " " + args; }

TEST(Cli, VersionAndHelp) {
  const auto v = test::run_command(gradsweep("--version"));
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.output.find("SDK ABI"), std::string::npos) << v.output;
  // The LibTorch, CUDA and NCCL it was built against.
  EXPECT_NE(v.output.find("torch " + std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR)),
            std::string::npos)
      << v.output;
#if defined(GRADSWEEP_WITH_NCCL) && GRADSWEEP_WITH_NCCL
  EXPECT_NE(v.output.find("nccl " + std::to_string(GRADSWEEP_NCCL_VERSION / 10000) + "."), std::string::npos)
      << v.output;
  EXPECT_NE(v.output.find("cuda " + std::to_string(GRADSWEEP_CUDA_VERSION / 1000) + "."), std::string::npos)
      << v.output;
#endif
  for (const char* sub : {"train", "plugins", "prepare"}) {
    const auto h = test::run_command(gradsweep(std::string(sub) + " --help"));
    EXPECT_EQ(h.exit_code, 0) << sub;
    EXPECT_NE(h.output.find("Usage"), std::string::npos) << h.output;
  }
}

// A mistyped command is named, with the nearest command when there is one, at any depth, exit 2; --help
// after it does not print the general help with success.
TEST(Cli, AMistypedCommandIsNamedWithTheNearestOne) {
  const auto unknown = test::run_command(gradsweep("frobnicate x"));
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("error: unknown command 'frobnicate' for 'gradsweep'; 'gradsweep --help' lists"),
            std::string::npos)
      << unknown.output;
  const auto help = test::run_command(gradsweep("frobnicate --help"));
  EXPECT_EQ(help.exit_code, 2) << help.output;
  EXPECT_NE(help.output.find("unknown command 'frobnicate'"), std::string::npos) << help.output;
  const auto typo = test::run_command(gradsweep("pln experiments/quickstart.yaml"));
  EXPECT_EQ(typo.exit_code, 2) << typo.output;
  EXPECT_NE(typo.output.find("unknown command 'pln' for 'gradsweep' (did you mean 'plan'?)"), std::string::npos)
      << typo.output;
  const auto nested = test::run_command(gradsweep("check strategyy ring"));
  EXPECT_EQ(nested.exit_code, 2) << nested.output;
  EXPECT_NE(nested.output.find("unknown command 'strategyy' for 'gradsweep check' (did you mean 'strategy'?)"),
            std::string::npos)
      << nested.output;
  // A hidden command is never suggested; a far word gets no suggestion.
  const auto hidden = test::run_command(gradsweep("cell-provenanc"));
  EXPECT_EQ(hidden.output.find("did you mean"), std::string::npos) << hidden.output;
  // What is not a command's place is left to the command: a subcommand's own positional argument.
  const auto known = test::run_command(gradsweep("plugins frobnicate"));
  EXPECT_EQ(known.output.find("unknown command"), std::string::npos) << known.output;
}

TEST(Cli, PluginsJsonListsEveryBuiltPlugin) {
  const auto r = test::run_command(gradsweep("plugins --json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["host_build"].get<std::string>().rfind("torch " + std::to_string(TORCH_VERSION_MAJOR) + ".", 0), 0u)
      << j["host_build"];
  std::set<std::string> names;
  for (const auto& p : j["plugins"]) {
    names.insert(p["kind"].get<std::string>() + ":" + p["name"].get<std::string>());
    // Every in-tree plugin is built against this SDK.
    EXPECT_EQ(p["abi"], std::to_string(sdk::kAbiMajor) + "." + std::to_string(sdk::kAbiMinor));
    EXPECT_TRUE(fs::exists(p["path"].get<std::string>()));
  }
  EXPECT_TRUE(names.count("model:gpt2"));
  EXPECT_TRUE(names.count("model:lstm_lm"));
  EXPECT_TRUE(names.count("strategy:single"));
}

// A user finds a plugin's keys by asking for it, not by mistyping one: every declared option with its
// type, default and help, in text and in JSON.
TEST(Cli, PluginsNameShowsEveryOptionWithTypeDefaultAndHelp) {
  const auto text = test::run_command(gradsweep("plugins ring"));
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("strategy ring"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("bucket_mb  float, default 25"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("overlap  bool, default true"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("algorithm  string, default auto, one of auto, ring, native, hierarchical"),
            std::string::npos)
      << text.output;
  EXPECT_NE(text.output.find("reproduces single"), std::string::npos) << "declared capabilities: " << text.output;
  EXPECT_EQ(text.output.find("lstm_lm"), std::string::npos) << "only the plugin asked for";

  const auto j = nlohmann::json::parse(test::run_command(gradsweep("plugins gpt2 --json")).output);
  ASSERT_EQ(j["plugins"].size(), 1u);
  bool preset = false;
  for (const auto& o : j["plugins"][0]["options"]) {
    EXPECT_FALSE(o["help"].get<std::string>().empty()) << o.dump();
    EXPECT_TRUE(o.contains("type") && o.contains("default")) << o.dump();
    preset = preset || o["key"] == "preset";
  }
  EXPECT_TRUE(preset) << j.dump();

  const auto missing = test::run_command(gradsweep("plugins nosuch"));
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.output.find("no plugin named 'nosuch'"), std::string::npos) << missing.output;
  EXPECT_NE(missing.output.find("ring"), std::string::npos) << "names the ones found: " << missing.output;
}

TEST(Cli, PluginsListsRefusedFilesWithReason) {
  const auto r =
      test::run_command(gradsweep("plugins --path " + (test::build_dir() / "test-plugins" / "refused").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("refused:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("plugin SDK ABI 99.0"), std::string::npos) << r.output;
}

TEST(Cli, TrainConfigErrorNamesFileLineAndKey) {
  const fs::path dir = test::scratch_dir();
  test::write_text(dir / "bad.yaml",
                   "model: {name: gpt2}\ndata: {train: a.bin, val: b.bin}\ntrain:\n  steps: 5\n"
                   "  batch_size: 4\n  seq_len: 8\n  learning_rate: 0.1\n");
  const auto r =
      test::run_command(gradsweep("train " + (dir / "bad.yaml").string() + " --out " + (dir / "o").string()));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("bad.yaml:7:3: train.learning_rate: unknown key"), std::string::npos) << r.output;
}

// Trains a 2-step cell on the byte corpus with the given model section; expected to fail.
test::CommandResult train_model(const std::string& model_section) {
  const fs::path dir = test::scratch_dir();
  const fs::path corpus = test::byte_corpus();
  test::write_text(dir / "c.yaml", "model: " + model_section + "\ndata: {train: " + (corpus / "train.bin").string() +
                                       ", val: " + (corpus / "val.bin").string() +
                                       "}\ntrain: {steps: 2, batch_size: 2, seq_len: 8}\n");
  return test::run_command(gradsweep("train " + (dir / "c.yaml").string() + " --out " + (dir / "o").string()));
}

TEST(Cli, TrainUnknownModelListsAvailable) {
  const auto r = train_model("{name: gtp2}");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("unknown model plugin 'gtp2'; available: gpt2, llama, lstm_lm"), std::string::npos)
      << r.output;
}

TEST(Cli, TrainRejectsTokensBeyondTheModelVocabulary) {
  const auto r = train_model("{name: gpt2, preset: gpt2-tiny, vocab_size: 100}");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("has vocab_size 100"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace gradsweep
