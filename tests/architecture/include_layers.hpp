#pragma once
// docs/architecture.md's ## Layers table, read as data, and the includes of host/ judged against it
// (layering_test.cpp). A row is "| `host/<folder>/` | `<target>` | `<folder>`, `<folder>` |" (or "—" for
// nothing); rows go from the bottom layer up.
#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::test {

struct Layer {
  std::string folder;                    // "comm", for host/comm/
  std::string target;                    // the CMake target its sources build into
  std::vector<std::string> may_include;  // the other host folders its files may include
};

// The rows of the section "## Layers" of `markdown`, in order; empty when there is none.
std::vector<Layer> parse_layers(const std::string& markdown);

// A folder allowed to include one that is not in a row above it (a cycle or an upward dependency).
std::vector<std::string> table_problems(const std::vector<Layer>& layers);

// Every `#include "<folder>/..."` (or `<folder/...>`) under `host_root`'s layer folders that names another layer folder
// which the file's own folder may not include: "comm/x.cpp:12 includes train/y.hpp: host/comm/ may
// include only config, util".
std::vector<std::string> include_problems(const std::filesystem::path& host_root, const std::vector<Layer>& layers);

}  // namespace gradsweep::test
