// A third party's view: install gradsweep, build the example strategy out of tree against the
// installed SDK with find_package(GradSweepSDK), and train with it through the installed host.
#include "sdk/installed_sdk.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace gradsweep {
namespace {

namespace fs = std::filesystem;

TEST(OutOfTreePlugin, BuildsAgainstInstalledSdkAndTrains) {
  const fs::path dir = test::scratch_dir();
  auto run = [](const std::string& cmd) {
    const auto r = test::run_command(cmd);
    EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.output;
    return r;
  };
  const fs::path prefix = test::installed_prefix();
  ASSERT_TRUE(fs::exists(prefix / "include" / "gradsweep" / "sdk" / "plugin.hpp"));
  ASSERT_TRUE(fs::exists(prefix / "bin" / "gradsweep"));

  test::build_out_of_tree(test::source_dir() / "sdk" / "examples" / "periodic_average", dir / "example");
  const fs::path plugin = dir / "example" / "plugins" / "periodic_average.so";
  ASSERT_TRUE(fs::exists(plugin));

  // The installed host finds its own installed plugins, and this one through the config's plugin path.
  const fs::path corpus = test::byte_corpus();
  test::write_text(dir / "cell.yaml",
                   "plugins:\n  paths: [" + (dir / "example" / "plugins").string() +
                       "]\nmodel: {name: gpt2, preset: gpt2-tiny, vocab_size: 257}\nstrategy: {name: periodic_average, "
                       "period: 4}\ndata: {train: " +
                       (corpus / "train.bin").string() + ", val: " + (corpus / "val.bin").string() +
                       "}\ntrain: {steps: 40, batch_size: 8, seq_len: 64, lr: 3e-3}\nmetrics: {peak_flops: 1e10}\n"
                       "runtime: {threads: 1}\n");
  const auto listing =
      run((prefix / "bin" / "gradsweep").string() + " plugins --path " + (dir / "example" / "plugins").string());
  EXPECT_NE(listing.output.find("periodic_average"), std::string::npos) << listing.output;
  EXPECT_NE(listing.output.find((prefix / "lib" / "gradsweep" / "plugins").string()), std::string::npos)
      << listing.output;
  run((prefix / "bin" / "gradsweep").string() + " train " + (dir / "cell.yaml").string() + " --out " +
      (dir / "cell").string());
  const auto summary = nlohmann::json::parse(test::read_text(dir / "cell" / "summary.json"));
  EXPECT_EQ(summary["strategy"], "periodic_average");
  EXPECT_EQ(summary["config"]["strategy"]["period"], 4);
  EXPECT_LT(summary["final_train_loss"].get<double>(), 4.0);
}

}  // namespace
}  // namespace gradsweep
