#pragma once
// docs/architecture.md's ## Parts of a folder table, read as data, and host/ judged against it
// (layering_test.cpp). A folder too big for one concept is split into parts, one sub-folder each, in the
// folder's own target and namespace; its parts are layered like the folders: a row is
// "| `host/<folder>/<part>/` | what it holds | `<part>`, `<part>` |" (or "—"), rows of one folder go from
// its bottom part up, and a part's files include only their own part and the parts its row names.
#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::test {

struct Part {
  std::string folder;                    // "comm", for host/comm/mpi/
  std::string part;                      // "mpi"
  std::vector<std::string> may_include;  // the other parts of `folder` its files may include
};

// The rows of the section "## Parts of a folder" of `markdown`, in order; empty when there is none.
std::vector<Part> parse_parts(const std::string& markdown);

// A part allowed to include one that is not in a row above it, of the same folder.
std::vector<std::string> part_table_problems(const std::vector<Part>& parts);

// In every folder that has parts: a source lying in the folder itself rather than in one of its parts, a
// sub-folder that is no part, and every `#include "<folder>/<part>/..."` that goes to a part the file's own
// part may not include: "comm/mpi/x.cpp:3 includes comm/registry/y.hpp: host/comm/mpi/ may include only core".
std::vector<std::string> part_problems(const std::filesystem::path& host_root, const std::vector<Part>& parts);

}  // namespace gradsweep::test
