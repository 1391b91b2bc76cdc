#pragma once
// The files a test works with: the source and build trees, a scratch directory per test, text in and
// out. No LibTorch: tests of the layers without it (tests/analysis/) link this alone.
#include <filesystem>
#include <string>

namespace gradsweep::test {

std::filesystem::path source_dir();
std::filesystem::path build_dir();

// A fresh empty directory under the build tree, named after the running test.
std::filesystem::path scratch_dir(const std::string& tag = "");

void write_text(const std::filesystem::path& path, const std::string& text);
std::string read_text(const std::filesystem::path& path);

}  // namespace gradsweep::test
