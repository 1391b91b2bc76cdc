// The SDK's core and the host's configuration build without LibTorch: each core header, and each source of
// host/config/, is compiled here by the compiler that built gradsweep, with the SDK's and the host's folders and
// the system's headers on the include path and no LibTorch. A core header that includes a LibTorch header, or a
// configuration source that reaches one through the SDK, fails to compile and fails this test, naming the file.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <sys/wait.h>

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;

const fs::path kSource = GRADSWEEP_TEST_SOURCE_DIR;

struct Compiled {
  int exit_code;
  std::string output;
};

// `source` checked for syntax only (no object written), against the SDK's and host's headers alone.
Compiled compile(const std::string& source_argument) {
  const std::string command = std::string(GRADSWEEP_TEST_CXX) + " -std=c++" + GRADSWEEP_TEST_CXX_STANDARD +
                              " -fsyntax-only -I" + (kSource / "sdk" / "include").string() + " -I" +
                              (kSource / "host").string() + " " + source_argument + " 2>&1";
  Compiled result{-1, ""};
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  for (std::size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0;)
    result.output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

TEST(SdkCore, EachCoreHeaderCompilesWithoutLibTorch) {
  for (const char* header : {"status.hpp", "options.hpp", "capabilities.hpp", "abi.hpp", "optimizer_spec.hpp"}) {
    const fs::path probe = fs::temp_directory_path() / (std::string("sdk-core-") + header + ".cpp");
    std::unique_ptr<FILE, int (*)(FILE*)> out(std::fopen(probe.c_str(), "w"), &std::fclose);
    ASSERT_TRUE(out) << probe;
    std::fprintf(out.get(), "#include <gradsweep/sdk/%s>\n", header);
    out.reset();
    const Compiled c = compile(probe.string());
    EXPECT_EQ(c.exit_code, 0) << "sdk/include/gradsweep/sdk/" << header << " needs more than the SDK's core:\n"
                              << c.output;
    fs::remove(probe);
  }
}

TEST(SdkCore, TheHostsConfigurationCompilesWithoutLibTorch) {
  int sources = 0;
  for (const auto& entry : fs::directory_iterator(kSource / "host" / "config")) {
    if (entry.path().extension() != ".cpp") continue;
    ++sources;
    const Compiled c = compile(entry.path().string());
    EXPECT_EQ(c.exit_code, 0) << entry.path().string() << " needs LibTorch:\n" << c.output;
  }
  EXPECT_GE(sources, 5);
}

// The check can fail: a file that includes a LibTorch header does not compile here.
TEST(SdkCore, AHeaderThatNeedsLibTorchIsRefused) {
  const Compiled c = compile((kSource / "sdk" / "include" / "gradsweep" / "sdk" / "model.hpp").string());
  EXPECT_NE(c.exit_code, 0) << c.output;
  EXPECT_NE(c.output.find("torch"), std::string::npos) << c.output;
}

}  // namespace
}  // namespace gradsweep::test
