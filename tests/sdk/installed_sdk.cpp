#include "sdk/installed_sdk.hpp"

#include "support/test_support.hpp"

#include <gtest/gtest.h>

namespace gradsweep::test {
namespace fs = std::filesystem;

namespace {

CommandResult run_expecting_success(const std::string& command) {
  const CommandResult r = run_command(command);
  EXPECT_EQ(r.exit_code, 0) << command << "\n" << r.output;
  return r;
}

}  // namespace

const fs::path& installed_prefix() {
  static const fs::path prefix = [] {
    const fs::path dir = scratch_dir("prefix");  // per test process: ctest runs each test in its own
    run_expecting_success("cmake --install " + build_dir().string() + " --prefix " + dir.string());
    return dir;
  }();
  return prefix;
}

std::string build_out_of_tree(const fs::path& source, const fs::path& build) {
  const CommandResult configure = run_expecting_success(
      "cmake -S " + source.string() + " -B " + build.string() + " -G Ninja -DCMAKE_BUILD_TYPE=Release " +
      // Plugins build clean under a third party's -Wall -Wextra -Werror (docs/development.md).
      "'-DCMAKE_CXX_FLAGS=-Wall -Wextra -Werror' -DCMAKE_PREFIX_PATH=" + installed_prefix().string() +
      " -DTorch_DIR=" + std::string(GRADSWEEP_TEST_TORCH_DIR));
  if (configure.exit_code != 0) return configure.output;
  return configure.output + run_expecting_success("cmake --build " + build.string()).output;
}

}  // namespace gradsweep::test
