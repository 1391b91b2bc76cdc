#pragma once
// A third party's set-up, shared by the SDK tests: gradsweep installed into a prefix (once per test
// process), and a plugin project configured and built out of tree against it with find_package(GradSweepSDK).
#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::test {

// `cmake --install` of this build tree into a scratch prefix, done once per test process.
const std::filesystem::path& installed_prefix();

// Configures `source` (a folder with a CMakeLists.txt) into `build` against the installed SDK and builds it.
// Returns cmake's output; fails the running test (with that output) when either step fails.
std::string build_out_of_tree(const std::filesystem::path& source, const std::filesystem::path& build);

// What a page tells a third party to run to build a plugin out of tree, taken from the page as written:
// the project folder the commands name (`mine` in `cmake -S mine -B mine/build ...`) and each line of its
// shell blocks that configures or builds it ("cmake -S ..." and "cmake --build ..."), in page order.
struct DocumentedBuild {
  std::string project;
  std::vector<std::string> commands;
};
DocumentedBuild documented_build(const std::string& page);

// Runs `build`'s commands verbatim in `work` (whose folder `build.project` holds the plugin's sources), with
// only the page's install prefix, /opt/gradsweep, read as installed_prefix(), and no Torch_DIR or
// CMAKE_PREFIX_PATH from the environment: as a third party with nothing but the page would. Returns the
// commands' output; fails the running test when one fails.
std::string build_as_documented(const DocumentedBuild& build, const std::filesystem::path& work);

}  // namespace gradsweep::test
