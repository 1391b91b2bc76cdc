#include "support/test_files.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace gradsweep::test {
namespace fs = std::filesystem;

fs::path source_dir() { return GRADSWEEP_TEST_SOURCE_DIR; }
fs::path build_dir() { return GRADSWEEP_TEST_BUILD_DIR; }

fs::path scratch_dir(const std::string& tag) {
  std::string name = "scratch";
  if (const auto* info = ::testing::UnitTest::GetInstance()->current_test_info())
    name = std::string(info->test_suite_name()) + "." + info->name();
  for (char& c : name)
    if (c == '/') c = '_';
  const fs::path dir = build_dir() / "test-scratch" / (name + tag);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace gradsweep::test
