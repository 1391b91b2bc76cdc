#include "architecture/folder_parts.hpp"

#include "architecture/markdown_table.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;

bool is_source(const fs::path& path) { return path.extension() == ".cpp" || path.extension() == ".hpp"; }

// A file's include problems against its part's row.
void check_includes(const fs::path& host_root, const fs::path& file, const Part& own,
                    const std::set<std::string>& parts_of_folder, std::vector<std::string>& problems) {
  static const std::regex kInclude(R"(^\s*#\s*include\s+["<]([a-z_]+)/([a-z_]+)/([^">]*)[">])");
  const std::set<std::string> allowed(own.may_include.begin(), own.may_include.end());
  const std::string rule = own.may_include.empty() ? "may include no other part of host/" + own.folder + "/"
                                                   : "may include only " + listed(own.may_include);
  std::ifstream in(file);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::smatch m;
    if (!std::regex_search(line, m, kInclude) || m[1] != own.folder) continue;
    const std::string part = m[2];
    if (part == own.part || !parts_of_folder.count(part) || allowed.count(part)) continue;
    problems.push_back(fs::relative(file, host_root).string() + ":" + std::to_string(number) + " includes " +
                       own.folder + "/" + part + "/" + m[3].str() + ": host/" + own.folder + "/" + own.part + "/ " +
                       rule);
  }
}

}  // namespace

std::vector<Part> parse_parts(const std::string& markdown) {
  static const std::regex kRow(R"(^\|\s*`host/([a-z_]+)/([a-z_]+)/`\s*\|.*)");
  std::vector<Part> parts;
  for (const std::string& line : section_lines(markdown, "## Parts of a folder")) {
    std::smatch m;
    if (!std::regex_match(line, m, kRow)) continue;
    const auto cells = cells_of(line);
    if (cells.size() < 3) continue;
    parts.push_back({m[1], m[2], quoted_words(cells[2])});
  }
  return parts;
}

std::vector<std::string> part_table_problems(const std::vector<Part>& parts) {
  std::vector<std::string> problems;
  std::map<std::string, std::set<std::string>> below;  // folder -> its parts in rows above
  for (const auto& p : parts) {
    for (const auto& dep : p.may_include)
      if (!below[p.folder].count(dep))
        problems.push_back("host/" + p.folder + "/" + p.part + "/ may include " + dep +
                           ", which is not a part of host/" + p.folder + "/ in a row above it");
    below[p.folder].insert(p.part);
  }
  return problems;
}

std::vector<std::string> part_problems(const fs::path& host_root, const std::vector<Part>& parts) {
  std::map<std::string, std::set<std::string>> parts_of;
  for (const auto& p : parts) parts_of[p.folder].insert(p.part);
  std::vector<std::string> problems;
  for (const auto& [folder, names] : parts_of) {
    if (!fs::is_directory(host_root / folder)) continue;
    std::vector<fs::path> entries;
    for (const auto& entry : fs::directory_iterator(host_root / folder)) entries.push_back(entry.path());
    std::sort(entries.begin(), entries.end());
    for (const auto& path : entries) {
      const std::string name = path.filename().string();
      if (fs::is_directory(path) && !names.count(name))
        problems.push_back("host/" + folder + "/" + name + "/ is not a part of host/" + folder +
                           "/ in docs/architecture.md's ## Parts of a folder");
      else if (!fs::is_directory(path) && is_source(path))
        problems.push_back(folder + "/" + name + " lies in host/" + folder + "/ itself, outside its parts (" +
                           listed({names.begin(), names.end()}) + ")");
    }
  }
  for (const auto& p : parts) {
    const fs::path dir = host_root / p.folder / p.part;
    if (!fs::is_directory(dir)) continue;
    std::vector<fs::path> files;
    for (const auto& entry : fs::recursive_directory_iterator(dir))
      if (entry.is_regular_file() && is_source(entry.path())) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const auto& file : files) check_includes(host_root, file, p, parts_of[p.folder], problems);
  }
  return problems;
}

}  // namespace gradsweep::test
