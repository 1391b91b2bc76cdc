// `gradsweep prepare` as the user types it: options, validation, summary.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include "cli/prepare_command.hpp"
#include "data/token_shard.hpp"
#include "data_test_support.hpp"

namespace gradsweep::cli {
namespace {

using data::testing::TempDir;

// Parses `args` (after the program name) with a fresh app holding only the prepare command.
void run(std::vector<std::string> args) {
  CLI::App app{"gradsweep"};
  app.require_subcommand(1);
  register_prepare_command(app);
  args.insert(args.begin(), "gradsweep");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
}

TEST(PrepareCommand, WritesTheDataSetAndPrintsASummary) {
  TempDir dir;
  ::testing::internal::CaptureStdout();
  run({"prepare", "--input", data::testing::fortune_file("tao").string(), "--out", (dir / "out").string(),
       "--tokenizer", "word", "--vocab", "300", "--lowercase", "--val-fraction", "0.1"});
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("word tokenizer (vocab size 300, 16-bit ids)"), std::string::npos) << out;
  EXPECT_NE(out.find((dir / "out" / "train.bin").string()), std::string::npos) << out;
  EXPECT_NE(out.find("documents"), std::string::npos) << out;
  EXPECT_GT(data::TokenShard::open(dir / "out" / "train.bin").size(), 1000);
  EXPECT_GT(data::TokenShard::open(dir / "out" / "val.bin").size(), 100);
}

TEST(PrepareCommand, ValidatesOptions) {
  TempDir dir;
  const std::string input = data::testing::fortune_file("tao").string();
  const std::string out = (dir / "out").string();
  try {
    run({"prepare", "--input", input, "--out", out, "--tokenizer", "bpe"});
    ADD_FAILURE() << "bpe without vocabulary files was accepted";
  } catch (const CLI::ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("--bpe-encoder"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run({"prepare", "--input", input, "--out", out, "--tokenizer", "unigram"}), CLI::ValidationError);
  EXPECT_THROW(run({"prepare", "--input", (dir / "nope").string(), "--out", out, "--tokenizer", "byte"}),
               CLI::ValidationError);
  EXPECT_THROW(run({"prepare", "--input", input, "--out", out, "--tokenizer", "byte", "--vocab", "100"}),
               CLI::ValidationError);
  EXPECT_THROW(run({"prepare", "--input", input, "--out", out, "--tokenizer", "byte", "--val-fraction", "1"}),
               CLI::ValidationError);
  EXPECT_THROW(run({"prepare", "--out", out, "--tokenizer", "byte"}), CLI::RequiredError);
  EXPECT_FALSE(std::filesystem::exists(dir / "out"));
}

TEST(PrepareCommand, HelpDescribesEveryOption) {
  CLI::App app{"gradsweep"};
  register_prepare_command(app);
  const std::string help = app.get_subcommand("prepare")->help();
  for (const char* option : {"--input", "--out", "--tokenizer", "--vocab", "--lowercase", "--bpe-encoder",
                             "--bpe-merges", "--val-fraction"}) {
    EXPECT_NE(help.find(option), std::string::npos) << option << " missing from:\n" << help;
  }
}

}  // namespace
}  // namespace gradsweep::cli
