#include "sdk/installed_sdk.hpp"

#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <sstream>

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
      // No Torch_DIR: the installed package finds the LibTorch it was built against by itself.
      "'-DCMAKE_CXX_FLAGS=-Wall -Wextra -Werror' -DCMAKE_PREFIX_PATH=" + installed_prefix().string());
  if (configure.exit_code != 0) return configure.output;
  return configure.output + run_expecting_success("cmake --build " + build.string()).output;
}

DocumentedBuild documented_build(const std::string& page) {
  static const std::regex kConfigure(R"(^\s*cmake -S (\S+) )");
  DocumentedBuild build;
  std::stringstream in(page);
  bool shell = false;
  for (std::string line; std::getline(in, line);) {
    const std::string trimmed = line.substr(std::min(line.find_first_not_of(' '), line.size()));
    if (trimmed.rfind("```", 0) == 0) {
      shell = !shell && trimmed == "```sh";
      continue;
    }
    std::smatch m;
    if (!shell) continue;
    if (std::regex_search(trimmed, m, kConfigure)) {
      if (build.project.empty()) build.project = m[1];
      build.commands.push_back(trimmed);
    } else if (trimmed.rfind("cmake --build ", 0) == 0) {
      build.commands.push_back(trimmed);
    }
  }
  return build;
}

std::string build_as_documented(const DocumentedBuild& build, const fs::path& work) {
  std::string output;
  for (std::string command : build.commands) {
    const std::string page_prefix = "/opt/gradsweep";
    for (std::size_t at; (at = command.find(page_prefix)) != std::string::npos;)
      command.replace(at, page_prefix.size(), installed_prefix().string());
    output += run_expecting_success("cd " + work.string() + " && env -u Torch_DIR -u CMAKE_PREFIX_PATH sh -c '" +
                                    command + "'")
                  .output;
  }
  return output;
}

}  // namespace gradsweep::test
