// docs/plugins.md carries a complete minimal strategy and a complete minimal model. These tests take each
// file and its CMakeLists.txt out of the page as written, build them out of tree against the installed SDK
// and train 2 ranks with the plugin: the losses must be `single`'s at the same global batch, as a
// synchronous strategy's are (tests/strategies/equivalence_test.cpp), with the model's keyed dropout on
// too. The model must also pass `gradsweep check model`. If a page's example stops compiling, a test fails.
#include "sdk/installed_sdk.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

namespace gradsweep {
namespace {

namespace fs = std::filesystem;

// The fenced block that follows `<!-- example: NAME -->` in `page`; empty when there is none.
std::string example_block(const std::string& page, const std::string& name) {
  const std::string marker = "<!-- example: " + name + " -->";
  const std::size_t at = page.find(marker);
  if (at == std::string::npos) return {};
  const std::size_t open = page.find("```", at + marker.size());
  const std::size_t body = page.find('\n', open);
  const std::size_t close = page.find("\n```", body);
  if (open == std::string::npos || body == std::string::npos || close == std::string::npos) return {};
  return page.substr(body + 1, close - body);
}

// The example `source` of docs/plugins.md and its CMakeLists.txt (the block named `cmake`), written into the
// project folder that docs/howto/`howto`'s commands name and built in `dir` with those commands as written.
// Returns where the plugins were built; a missing block or command, or a failed build, fails the test.
fs::path build_page_example(const fs::path& dir, const std::string& source, const std::string& cmake,
                            const std::string& howto) {
  const std::string page = test::read_text(test::source_dir() / "docs" / "plugins.md");
  const std::string code = example_block(page, source), lists = example_block(page, cmake);
  EXPECT_FALSE(code.empty()) << "docs/plugins.md has no block after <!-- example: " << source << " -->";
  EXPECT_FALSE(lists.empty()) << "docs/plugins.md has no block after <!-- example: " << cmake << " -->";
  const auto build = test::documented_build(test::read_text(test::source_dir() / "docs" / "howto" / howto));
  EXPECT_FALSE(build.project.empty()) << "docs/howto/" << howto << " gives no `cmake -S` command";
  test::write_text(dir / build.project / source, code);
  test::write_text(dir / build.project / "CMakeLists.txt", lists);
  const std::string output = test::build_as_documented(build, dir);
  const fs::path plugins = dir / build.project / "build" / "plugins";
  EXPECT_TRUE(fs::is_directory(plugins)) << output;
  return plugins;
}

std::vector<double> losses(const fs::path& out) {
  std::vector<double> values;
  std::ifstream metrics(out / "metrics.jsonl");
  for (std::string line; std::getline(metrics, line);)
    values.push_back(nlohmann::json::parse(line).at("loss").get<double>());
  return values;
}

const std::string kTinyGpt2 = "{name: gpt2, preset: gpt2-tiny, vocab_size: 257, block_size: 32}";

std::string tiny_cell(const fs::path& plugins, const std::string& strategy, const std::string& model = kTinyGpt2) {
  const fs::path corpus = test::byte_corpus();
  return "plugins:\n  paths: [" + plugins.string() + "]\n" + "model: " + model + "\nstrategy: " + strategy +
         "\ndata: {train: " + (corpus / "train.bin").string() + ", val: " + (corpus / "val.bin").string() + "}\n" +
         "train: {steps: 20, batch_size: 8, seq_len: 32, lr: 3e-3, grad_clip: 1.0, seed: 7}\n"
         "eval: {batches: 2}\ncheckpoint: {every: 0}\nmetrics: {peak_flops: 1e10}\nruntime: {threads: 1}\n";
}

TEST(DocsExample, MinimalStrategyFromPluginsPageBuildsAndMatchesSingle) {
  const fs::path dir = test::scratch_dir();
  // Built with the commands of docs/howto/own-strategy.md, as written there.
  const fs::path plugins = build_page_example(dir, "minimal_strategy.cpp", "CMakeLists.txt", "own-strategy.md");
  ASSERT_TRUE(fs::exists(plugins / "minimal_strategy.so")) << plugins;

  // The configuration names the plugin by its descriptor's name, not by its file's.
  const fs::path gradsweep = test::installed_prefix() / "bin" / "gradsweep";
  const auto listing = test::run_command(gradsweep.string() + " plugins minimal_allreduce --path " + plugins.string());
  ASSERT_EQ(listing.exit_code, 0) << listing.output;
  EXPECT_NE(listing.output.find("one of native, ring"), std::string::npos) << listing.output;

  test::write_text(dir / "single.yaml", tiny_cell(plugins, "{name: single}"));
  test::write_text(dir / "docs.yaml", tiny_cell(plugins, "{name: minimal_allreduce, algorithm: ring}"));
  const auto single = test::run_command(gradsweep.string() + " train " + (dir / "single.yaml").string() + " --out " +
                                        (dir / "single").string());
  ASSERT_EQ(single.exit_code, 0) << single.output;
  const auto docs = test::run_command(test::mpirun(
      2, gradsweep.string() + " train " + (dir / "docs.yaml").string() + " --out " + (dir / "docs").string(), "", 120));
  ASSERT_EQ(docs.exit_code, 0) << docs.output;

  const std::vector<double> reference = losses(dir / "single"), run = losses(dir / "docs");
  ASSERT_EQ(reference.size(), 20u);
  ASSERT_EQ(run.size(), 20u);
  double worst = 0.0;
  for (std::size_t i = 0; i < run.size(); ++i) worst = std::max(worst, std::abs(run[i] - reference[i]) / reference[i]);
  EXPECT_LT(worst, 1e-5);
  EXPECT_LT(run.back(), run.front());
  const auto summary = nlohmann::json::parse(test::read_text(dir / "docs" / "summary.json"));
  EXPECT_EQ(summary.at("world_size"), 2);
  EXPECT_EQ(summary.at("strategy"), "minimal_allreduce");
}

// Every page that tells a third party how to build a plugin gives commands that configure against the
// installed prefix alone (no Torch_DIR to know) and then build; the two tests above run two of them.
TEST(DocsExample, EveryPluginPageGivesTheSameCommandsWithNothingMoreToKnow) {
  for (const char* page : {"plugins.md", "howto/own-strategy.md", "howto/own-model.md"}) {
    const auto build = test::documented_build(test::read_text(test::source_dir() / "docs" / page));
    ASSERT_EQ(build.commands.empty(), false) << page;
    EXPECT_FALSE(build.project.empty()) << page;
    std::string all;
    for (const auto& c : build.commands) all += c + "\n";
    EXPECT_NE(all.find("-B " + build.project + "/build -DCMAKE_PREFIX_PATH=/opt/gradsweep"), std::string::npos)
        << page << ":\n"
        << all;
    EXPECT_NE(all.find("cmake --build " + build.project + "/build"), std::string::npos) << page << ":\n" << all;
    EXPECT_EQ(all.find("Torch_DIR"), std::string::npos) << page << ":\n" << all;
  }
}

double worst_relative_difference(const std::vector<double>& run, const std::vector<double>& reference) {
  double worst = 0.0;
  for (std::size_t i = 0; i < run.size() && i < reference.size(); ++i)
    worst = std::max(worst, std::abs(run[i] - reference[i]) / reference[i]);
  return worst;
}

TEST(DocsExample, MinimalModelFromPluginsPageBuildsTrainsAndPassesTheCheck) {
  const fs::path dir = test::scratch_dir();
  // Built with the commands of docs/howto/own-model.md, as written there.
  const fs::path plugins = build_page_example(dir, "minimal_model.cpp", "model CMakeLists.txt", "own-model.md");
  ASSERT_TRUE(fs::exists(plugins / "minimal_model.so")) << plugins;
  const fs::path gradsweep = test::installed_prefix() / "bin" / "gradsweep";

  // What the page promises of it, judged by the installed host.
  const auto check = test::run_command(gradsweep.string() + " check model minimal_mlp --path " + plugins.string());
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_NE(check.output.find("PASSED: 9 checks"), std::string::npos) << check.output;
  EXPECT_NE(check.output.find("two halves"), std::string::npos) << check.output;  // its dropout was compared

  // Keyed dropout on: 2 ranks under ring, and under fsdp over the model's units, reproduce single.
  const std::string model = "{name: minimal_mlp, vocab_size: 257, width: 32, layers: 2, dropout: 0.1}";
  test::write_text(dir / "single.yaml", tiny_cell(plugins, "{name: single}", model));
  const auto single = test::run_command(gradsweep.string() + " train " + (dir / "single.yaml").string() + " --out " +
                                        (dir / "single").string());
  ASSERT_EQ(single.exit_code, 0) << single.output;
  const std::vector<double> reference = losses(dir / "single");
  ASSERT_EQ(reference.size(), 20u);
  EXPECT_LT(reference.back(), reference.front());  // it learns (20 steps from ln 257: about 0.07 lower)
  for (const char* strategy : {"ring", "fsdp"}) {
    const std::string name = strategy;
    test::write_text(dir / (name + ".yaml"), tiny_cell(plugins, "{name: " + name + "}", model));
    const auto run = test::run_command(test::mpirun(
        2, gradsweep.string() + " train " + (dir / (name + ".yaml")).string() + " --out " + (dir / name).string(), "",
        120));
    ASSERT_EQ(run.exit_code, 0) << run.output;
    const std::vector<double> trained = losses(dir / name);
    ASSERT_EQ(trained.size(), 20u) << name;
    EXPECT_LT(worst_relative_difference(trained, reference), 1e-5) << name;
    const auto summary = nlohmann::json::parse(test::read_text(dir / name / "summary.json"));
    EXPECT_EQ(summary.at("world_size"), 2) << name;
    EXPECT_EQ(summary.at("architecture"), "minimal_mlp") << summary.dump();
    EXPECT_EQ(summary.at("params"), 257 * 32 * 2 + 2 * 2 * 4 * 32 * 32) << summary.dump();
  }
}

}  // namespace
}  // namespace gradsweep
