#pragma once
// docs/architecture.md's ## Layers table, read as data, and host/ judged against it (layering_test.cpp): its
// includes, its namespaces and which target its sources are compiled into. A row is
// "| `host/<folder>/` | `<target>`, `<target>` | `<folder>`, `<folder>` |" (or "—" for nothing); rows go
// from the bottom layer up.
#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::test {

struct Layer {
  std::string folder;                    // "comm", for host/comm/
  std::vector<std::string> targets;      // the CMake targets its sources build into, the library first
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

// Every namespace a file of a layer folder opens outside gradsweep::<folder> (nested and anonymous ones
// are fine): "config/x.hpp:8 declares namespace gradsweep::train: host/config/ declares only gradsweep::config".
std::vector<std::string> namespace_problems(const std::filesystem::path& host_root, const std::vector<Layer>& layers);

// Every .cpp of a layer folder that the CMakeLists.txt files of its own folder do not compile into one of
// the row's targets, and every one that a CMakeLists.txt of another folder (host/'s own included) compiles.
std::vector<std::string> target_problems(const std::filesystem::path& host_root, const std::vector<Layer>& layers);

// Every host target that a folder's CMakeLists.txt links into one of its row's targets while the row may not
// include that target's folder: "cli/CMakeLists.txt links gradsweep_cluster (host/cluster/) into gradsweep_cli:
// host/cli/ may include only ...". The table governs the link lines as it governs the includes.
std::vector<std::string> link_problems(const std::filesystem::path& host_root, const std::vector<Layer>& layers);

// Every folder a row lets its folder include that none of the folder's files includes: the table says what
// the code needs, no more ("host/cli/ may include cluster, which none of its files includes").
std::vector<std::string> unused_permissions(const std::filesystem::path& host_root, const std::vector<Layer>& layers);

}  // namespace gradsweep::test
