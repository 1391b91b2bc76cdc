#include "architecture/include_layers.hpp"

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;

// The backticked words of one table cell.
std::vector<std::string> quoted_words(const std::string& cell) {
  static const std::regex kWord("`([^`]+)`");
  std::vector<std::string> words;
  for (std::sregex_iterator it(cell.begin(), cell.end(), kWord), end; it != end; ++it) words.push_back((*it)[1]);
  return words;
}

std::vector<std::string> cells_of(const std::string& row) {
  std::vector<std::string> cells;
  std::stringstream in(row);
  std::string cell;
  std::getline(in, cell, '|');  // before the first bar
  while (std::getline(in, cell, '|')) cells.push_back(cell);
  return cells;
}

std::string listed(const std::vector<std::string>& folders) {
  std::string text;
  for (const auto& f : folders) text += (text.empty() ? "" : ", ") + f;
  return text;
}

std::vector<fs::path> sources_under(const fs::path& folder) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    const auto ext = entry.path().extension();
    if (entry.is_regular_file() && (ext == ".cpp" || ext == ".hpp")) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

std::vector<Layer> parse_layers(const std::string& markdown) {
  static const std::regex kRow(R"(^\|\s*`host/([a-z_]+)/`\s*\|.*)");
  std::vector<Layer> layers;
  std::stringstream in(markdown);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind("#", 0) == 0) {
      inside = line == "## Layers";
      continue;
    }
    std::smatch m;
    if (!inside || !std::regex_match(line, m, kRow)) continue;
    const auto cells = cells_of(line);
    if (cells.size() < 3) continue;
    const auto targets = quoted_words(cells[1]);
    layers.push_back({m[1], targets.empty() ? "" : targets.front(), quoted_words(cells[2])});
  }
  return layers;
}

std::vector<std::string> table_problems(const std::vector<Layer>& layers) {
  std::vector<std::string> problems;
  std::set<std::string> below;
  for (const auto& layer : layers) {
    for (const auto& dep : layer.may_include)
      if (!below.count(dep))
        problems.push_back("host/" + layer.folder + "/ may include " + dep + ", which is not in a row above it");
    below.insert(layer.folder);
  }
  return problems;
}

std::vector<std::string> include_problems(const fs::path& host_root, const std::vector<Layer>& layers) {
  static const std::regex kInclude(R"(^\s*#\s*include\s+["<]([a-z_]+)/([^">]*)[">])");
  std::set<std::string> folders;
  for (const auto& layer : layers) folders.insert(layer.folder);
  std::vector<std::string> problems;
  for (const auto& layer : layers) {
    if (!fs::is_directory(host_root / layer.folder)) continue;
    const std::set<std::string> allowed(layer.may_include.begin(), layer.may_include.end());
    const std::string rule =
        layer.may_include.empty() ? "may include nothing of host/" : "may include only " + listed(layer.may_include);
    for (const auto& file : sources_under(host_root / layer.folder)) {
      std::ifstream in(file);
      std::string line;
      for (int number = 1; std::getline(in, line); ++number) {
        std::smatch m;
        if (!std::regex_search(line, m, kInclude)) continue;
        const std::string target = m[1];
        if (target == layer.folder || !folders.count(target) || allowed.count(target)) continue;
        problems.push_back(fs::relative(file, host_root).string() + ":" + std::to_string(number) + " includes " +
                           target + "/" + m[2].str() + ": host/" + layer.folder + "/ " + rule);
      }
    }
  }
  return problems;
}

}  // namespace gradsweep::test
