#pragma once
// A third party's set-up, shared by the SDK tests: gradsweep installed into a prefix (once per test
// process), and a plugin project configured and built out of tree against it with find_package(GradSweepSDK).
#include <filesystem>
#include <string>

namespace gradsweep::test {

// `cmake --install` of this build tree into a scratch prefix, done once per test process.
const std::filesystem::path& installed_prefix();

// Configures `source` (a folder with a CMakeLists.txt) into `build` against the installed SDK and builds it.
// Returns cmake's output; fails the running test (with that output) when either step fails.
std::string build_out_of_tree(const std::filesystem::path& source, const std::filesystem::path& build);

}  // namespace gradsweep::test
