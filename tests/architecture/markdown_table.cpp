#include "architecture/markdown_table.hpp"

#include <regex>
#include <sstream>

namespace gradsweep::test {

std::vector<std::string> section_lines(const std::string& markdown, const std::string& heading) {
  std::vector<std::string> lines;
  std::stringstream in(markdown);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#", 0) == 0)
      inside = line == heading;
    else if (inside)
      lines.push_back(line);
  }
  return lines;
}

std::vector<std::string> cells_of(const std::string& row) {
  std::vector<std::string> cells;
  std::stringstream in(row);
  std::string cell;
  std::getline(in, cell, '|');  // before the first bar
  while (std::getline(in, cell, '|')) cells.push_back(cell);
  return cells;
}

std::vector<std::string> quoted_words(const std::string& cell) {
  static const std::regex kWord("`([^`]+)`");
  std::vector<std::string> words;
  for (std::sregex_iterator it(cell.begin(), cell.end(), kWord), end; it != end; ++it) words.push_back((*it)[1]);
  return words;
}

std::string listed(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& n : names) text += (text.empty() ? "" : ", ") + n;
  return text;
}

}  // namespace gradsweep::test
