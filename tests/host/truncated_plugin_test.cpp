// Truncated libraries in a plugin directory, through the real CLI: before the ELF check, dlopen of either
// file killed `gradsweep plugins` and `gradsweep train` with SIGBUS.
#include "support/test_support.hpp"
#include "tiny_cell.hpp"

#include <gtest/gtest.h>

namespace gradsweep {
namespace {

namespace fs = std::filesystem;

void copy_prefix(const fs::path& from, const fs::path& to, std::size_t bytes) {
  std::string text = test::read_text(from);
  ASSERT_GT(text.size(), bytes) << from;
  text.resize(bytes);
  test::write_text(to, text);
}

// A plugin directory holding half of a real plugin and the first 5000 bytes of an executable.
fs::path truncated_plugin_dir() {
  const fs::path dir = test::scratch_dir("plugins");
  const fs::path single = test::plugin_dir() / "gradsweep_strategy_single.so";
  copy_prefix(single, dir / "half_single.so", fs::file_size(single) / 2);
  copy_prefix(test::gradsweep_binary(), dir / "gradsweep_head.so", 5000);
  return dir;
}

TEST(TruncatedPlugin, PluginsListsThemAsRefusedWithTheReason) {
  const fs::path dir = truncated_plugin_dir();
  const auto r = test::run_command(test::gradsweep_command("plugins --path " + dir.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::size_t refused = r.output.find("refused:");
  ASSERT_NE(refused, std::string::npos) << r.output;
  for (const char* name : {"half_single.so", "gradsweep_head.so"})
    EXPECT_NE(r.output.find((dir / name).string() + ": cannot load: truncated: ", refused), std::string::npos)
        << name << "\n"
        << r.output;
  // The built plugins are still listed (the copy of 'single' was refused, so no shadowing either).
  EXPECT_NE(r.output.find("gradsweep_strategy_single.so"), std::string::npos) << r.output;
}

TEST(TruncatedPlugin, TrainStillWorksWithTheGoodPlugins) {
  const fs::path dir = test::scratch_dir();
  const fs::path plugins = truncated_plugin_dir();
  const auto r = test::run_command(
      "GRADSWEEP_PLUGIN_PATH=" + plugins.string() + " " +
      test::gradsweep_command("train " + test::write_tiny_cell(dir, 2).string() + " --out " + (dir / "cell").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir / "cell" / "summary.json")) << r.output;
}

}  // namespace
}  // namespace gradsweep
