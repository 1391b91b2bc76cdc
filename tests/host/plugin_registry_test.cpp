// The plugin boundary: discovery, the descriptor checks, and refusal messages naming both versions.
#include "plugins/elf_check.hpp"
#include "plugins/plugin_instance.hpp"
#include "plugins/plugin_registry.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>
#include <torch/version.h>

namespace gradsweep {
namespace {

using plugins::PluginRegistry;
using sdk::PluginKind;
namespace fs = std::filesystem;

const fs::path kRefused = GRADSWEEP_TEST_REFUSED_DIR;

TEST(PluginRegistry, FindsBuiltPluginsWithTheirDescriptors) {
  PluginRegistry registry;
  registry.scan({test::plugin_dir()});
  const plugins::PluginRecord& single = registry.find(PluginKind::Strategy, "single");
  EXPECT_EQ(single.descriptor->abi_major, sdk::kAbiMajor);
  EXPECT_EQ(single.descriptor->build.torch_major, static_cast<std::uint32_t>(TORCH_VERSION_MAJOR));
  EXPECT_EQ(single.path.parent_path(), fs::weakly_canonical(test::plugin_dir()));
  EXPECT_NE(registry.try_find(PluginKind::Model, "gpt2"), nullptr);
  EXPECT_NE(registry.try_find(PluginKind::Model, "lstm_lm"), nullptr);
  EXPECT_TRUE(registry.refused().empty()) << registry.refused().front().reason;
}

TEST(PluginRegistry, RefusesWrongAbiMajorNamingBothVersions) {
  PluginRegistry registry;
  registry.load_file(kRefused / "test_plugin_wrong_abi.so");
  ASSERT_EQ(registry.refused().size(), 1u);
  const std::string reason = registry.refused()[0].reason;
  EXPECT_NE(reason.find("test_plugin_wrong_abi.so"), std::string::npos) << reason;
  EXPECT_NE(reason.find("plugin SDK ABI 99.0"), std::string::npos) << reason;
  EXPECT_NE(reason.find("host SDK ABI " + std::to_string(sdk::kAbiMajor) + "." + std::to_string(sdk::kAbiMinor)),
            std::string::npos)
      << reason;
  EXPECT_EQ(registry.try_find(PluginKind::Strategy, "wrong_abi"), nullptr);
}

TEST(PluginRegistry, RefusesOtherLibTorchNamingBothBuilds) {
  PluginRegistry registry;
  registry.load_file(kRefused / "test_plugin_wrong_torch.so");
  ASSERT_EQ(registry.refused().size(), 1u);
  const std::string reason = registry.refused()[0].reason;
  const std::string host_torch =
      "torch " + std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR);
  const std::string plugin_torch = "torch " + std::to_string(TORCH_VERSION_MAJOR + 1) + ".7";
  EXPECT_NE(reason.find("plugin built against " + plugin_torch), std::string::npos) << reason;
  EXPECT_NE(reason.find("host built against " + host_torch), std::string::npos) << reason;
}

TEST(PluginRegistry, UnknownPluginListsTheAvailableOnes) {
  PluginRegistry registry;
  registry.scan({test::plugin_dir()});
  try {
    registry.find(PluginKind::Strategy, "rnig");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("unknown strategy plugin 'rnig'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("single"), std::string::npos) << msg;
  }
}

TEST(PluginRegistry, BadFilesAreRefusedAndScanningGoesOn) {
  const fs::path dir = test::scratch_dir();
  // An incompatible plugin and a file that is not a library at all: both refused, neither fatal.
  fs::copy_file(kRefused / "test_plugin_wrong_abi.so", dir / "copy.so");
  test::write_text(dir / "garbage.so", "not an ELF file");
  PluginRegistry registry;
  registry.scan({dir});
  ASSERT_EQ(registry.refused().size(), 2u);
  EXPECT_NE(registry.refused()[1].reason.find("cannot load"), std::string::npos) << registry.refused()[1].reason;
}

// The first `bytes` of `from` in `to`: a copy cut short.
void copy_prefix(const fs::path& from, const fs::path& to, std::size_t bytes) {
  std::string text = test::read_text(from);
  ASSERT_GT(text.size(), bytes) << from;
  text.resize(bytes);
  test::write_text(to, text);
}

TEST(PluginRegistry, TruncatedLibrariesAreRefusedBeforeDlopen) {
  // Before the ELF check, dlopen of either file killed the process with SIGBUS.
  const fs::path dir = test::scratch_dir();
  const fs::path single = test::plugin_dir() / "gradsweep_strategy_single.so";
  copy_prefix(single, dir / "half_plugin.so", fs::file_size(single) / 2);
  copy_prefix("/bin/ls", dir / "ls_head.so", 5000);
  copy_prefix(single, dir / "header_only.so", 40);
  fs::copy_file(single, dir / "whole.so");
  PluginRegistry registry;
  registry.scan({dir});
  ASSERT_EQ(registry.refused().size(), 3u);
  for (const auto& r : registry.refused()) {
    EXPECT_NE(r.reason.find(r.path.string() + ": cannot load: truncated: "), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find("but the file has "), std::string::npos) << r.reason;
  }
  EXPECT_NE(registry.refused()[0].reason.find("the section header table ends at byte"), std::string::npos)
      << registry.refused()[0].reason;
  EXPECT_NE(registry.refused()[1].reason.find("the ELF header ends at byte"), std::string::npos)
      << registry.refused()[1].reason;
  // The whole copy still loads.
  EXPECT_EQ(registry.find(PluginKind::Strategy, "single").path.filename(), "whole.so");
}

TEST(PluginRegistry, ElfCheckAcceptsEveryBuiltPluginAndRefusesOtherKinds) {
  for (const auto& entry : fs::directory_iterator(test::plugin_dir()))
    if (entry.path().extension() == ".so") {
      EXPECT_EQ(plugins::elf_problem(entry.path()), "") << entry.path();
    }
  // An executable is not a library; a text file is not ELF.
  const fs::path dir = test::scratch_dir();
  test::write_text(dir / "text.so", "not an ELF file at all, but longer than an ELF header is long: 64 bytes");
  EXPECT_EQ(plugins::elf_problem(dir / "text.so"), "not an ELF file (no ELF magic number)");
  const std::string exe = plugins::elf_problem(test::gradsweep_binary());
  EXPECT_TRUE(exe.empty() || exe.find("not a shared library") != std::string::npos) << exe;
}

TEST(PluginRegistry, EarlierDirectoryShadowsLater) {
  const fs::path dir = test::scratch_dir();
  fs::copy_file(test::plugin_dir() / "gradsweep_strategy_single.so", dir / "my_single.so");
  PluginRegistry registry;
  registry.scan({dir, test::plugin_dir()});
  EXPECT_EQ(registry.find(PluginKind::Strategy, "single").path.parent_path(), fs::weakly_canonical(dir));
  bool shadow_reported = false;
  for (const auto& r : registry.refused()) shadow_reported |= r.reason.find("already provided by") != std::string::npos;
  EXPECT_TRUE(shadow_reported);
}

TEST(PluginRegistry, SearchPathHonoursEnvironmentAndNeverTheWorkingDirectory) {
  ::setenv("GRADSWEEP_PLUGIN_PATH", "/tmp/a:/tmp/b", 1);
  const auto path = PluginRegistry::search_path({"/x"});
  ::unsetenv("GRADSWEEP_PLUGIN_PATH");
  ASSERT_GE(path.size(), 3u);
  EXPECT_EQ(path[0], "/x");
  EXPECT_EQ(path[1], "/tmp/a");
  EXPECT_EQ(path[2], "/tmp/b");
  for (const auto& p : path) EXPECT_NE(p, fs::path("."));
}

}  // namespace
}  // namespace gradsweep
