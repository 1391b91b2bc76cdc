// report.html end to end: a real small sweep (tiny GPT-2 with `single` on one rank and `ring` on two, a tiny
// LSTM on one rank, and a cell whose validation shard is too small, which fails) through `gradsweep run`,
// then its page loaded in headless Chromium (Debian's `chromium`): no script errors, every chart drawn with
// one dataset per finished group, the failed cell listed, the LSTM not compared with GPT-2's baseline, trace
// links, and a screenshot under the scratch directory (its path is printed).
#include "experiment_test_support.hpp"
#include "short_shard.hpp"

#include "experiment/plan/sweep_plan.hpp"
#include "support/skip_rule.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>

namespace gradsweep {
namespace {
namespace fs = std::filesystem;

const char* kRootEnv = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ";

std::string chromium_binary() {
  for (const char* name : {"chromium", "chromium-browser"}) {
    const auto r = test::run_command(std::string("command -v ") + name);
    if (r.exit_code == 0) return r.output.substr(0, r.output.find('\n'));
  }
  return "";
}

// Headless Chromium on `page` with a profile of its own under `scratch` (removed after). As root it needs
// --no-sandbox. The virtual time budget lets the page's scripts finish before the DOM or screenshot is taken.
test::CommandResult chromium(const std::string& binary, const fs::path& scratch, const fs::path& page,
                             const std::string& what) {
  const fs::path profile = scratch / "chromium-profile";
  const auto r =
      test::run_command("timeout -k 5 120 " + binary +
                        " --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir=" + profile.string() +
                        " --enable-logging=stderr --virtual-time-budget=5000 " + what + " file://" + page.string() +
                        " 2>" + (scratch / "chromium.stderr").string());
  fs::remove_all(profile);
  return r;
}

TEST(ReportPage, ChromiumDrawsEveryChartWithoutErrors) {
  const std::string browser = chromium_binary();
  if (browser.empty())
    GRADSWEEP_SKIP_UNLESS_CI("no chromium on PATH (Debian package chromium; scripts/install-deps.sh installs it)");
  const fs::path dir = test::scratch_dir();
  test::write_short_shard(dir / "short.bin", 10);
  test::write_text(dir / "page.yaml",
                   test::tiny_experiment("name: page\nlauncher: {threads: 1}\n"
                                         "include:\n"
                                         "  - {strategy: single, ranks_per_node: 1}\n"
                                         "  - {strategy: ring, ranks_per_node: 2}\n"
                                         "  - {model: {name: lstm_lm, preset: lstm-tiny, vocab_size: 257}}\n"
                                         "  - {data.val: short.bin}\n",
                                         6));
  const auto run = test::run_command(std::string(kRootEnv) + "timeout -k 5 300 " +
                                     test::gradsweep("run " + (dir / "page.yaml").string() + " --out " +
                                                     (dir / "out").string() + " --set eval.every=2"));
  ASSERT_EQ(run.exit_code, 1) << "one cell fails, the others finish:\n" << run.output;
  const auto plan = runs::read_plan(dir / "out");
  ASSERT_EQ(plan.cells.size(), 4u);
  const fs::path page = dir / "out" / "report.html";
  ASSERT_TRUE(fs::exists(page));
  const std::string html = test::read_text(page);
  // Self-contained: every script is inline, nothing is fetched.
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);

  const auto dom = chromium(browser, dir, page, "--dump-dom");
  const std::string log = test::read_text(dir / "chromium.stderr");
  ASSERT_EQ(dom.exit_code, 0) << log;
  // errors.js and page.js mark <html>: what went wrong, and that the drawing finished.
  std::smatch root;
  ASSERT_TRUE(std::regex_search(dom.output, root, std::regex("<html[^>]*>"))) << dom.output.substr(0, 2000);
  EXPECT_NE(root.str().find("data-errors=\"[]\""), std::string::npos) << root.str();
  EXPECT_NE(root.str().find("data-ready=\"1\""), std::string::npos) << root.str() << "\n" << log;
  EXPECT_EQ(log.find("Uncaught"), std::string::npos) << log;

  // Every chart drawn: one dataset per finished group (3: single, ring, the LSTM) in the per-configuration
  // and loss charts, one per part in the step breakdown.
  const std::map<std::string, int> expected{{"throughput", 3},    {"efficiency", 3}, {"loss_step", 3},
                                            {"loss_time", 3},     {"bytes", 3},      {"memory", 3},
                                            {"step_breakdown", 5}};
  std::map<std::string, int> drawn;
  const std::regex card("data-chart=\"([a-z_]+)\"[^>]*data-datasets=\"([0-9]+)\"");
  for (std::sregex_iterator it(dom.output.begin(), dom.output.end(), card), end; it != end; ++it)
    drawn[(*it)[1]] = std::stoi((*it)[2]);
  for (const auto& [chart, n] : expected) EXPECT_EQ(drawn[chart], n) << chart;
  EXPECT_GE(drawn.size(), expected.size());

  // The failed cell is listed as failed; the LSTM has no baseline of its model; ok cells link their traces.
  EXPECT_NE(dom.output.find("Failed cells"), std::string::npos);
  EXPECT_NE(dom.output.find("<code>" + plan.cells[3].id + "</code>"), std::string::npos) << plan.cells[3].id;
  EXPECT_NE(dom.output.find("no baseline of the same model and data"), std::string::npos);
  for (std::size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(fs::exists(plan.cells[i].dir / "trace.json")) << plan.cells[i].id;
    EXPECT_NE(dom.output.find("href=\"cells/" + plan.cells[i].id + "/trace.json\""), std::string::npos)
        << plan.cells[i].id;
  }
  // report.md says the same about the LSTM, and "one run" once, not in every cell.
  const std::string md = test::read_text(dir / "out" / "report.md");
  EXPECT_NE(md.find("| no baseline of the same model and data |"), std::string::npos) << md;
  EXPECT_EQ(md.find("(one run, no interval)"), std::string::npos) << md;
  EXPECT_NE(md.find("One run per group: no intervals."), std::string::npos) << md;

  const fs::path shot = dir / "report.png";
  const auto screenshot = chromium(browser, dir, page, "--screenshot=" + shot.string() + " --window-size=1400,3000");
  ASSERT_EQ(screenshot.exit_code, 0) << test::read_text(dir / "chromium.stderr");
  std::ifstream png(shot, std::ios::binary);
  char magic[8] = {};
  png.read(magic, 8);
  EXPECT_EQ(std::string(magic, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  std::cout << "report page screenshot: " << shot.string() << "\n";
}

}  // namespace
}  // namespace gradsweep
