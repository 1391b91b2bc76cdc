#include "reference/markdown.hpp"

#include <algorithm>

namespace gradsweep::reference {
namespace {

// The longest run of backticks in `text`: a code span or fence must be longer to hold it.
std::size_t longest_backtick_run(const std::string& text) {
  std::size_t longest = 0, run = 0;
  for (const char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

std::string cell(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string row(const std::vector<std::string>& cells) {
  std::string out = "|";
  for (const std::string& c : cells) out += " " + cell(c) + " |";
  return out + "\n";
}

}  // namespace

std::string code(const std::string& text) {
  if (text.empty()) return "";
  const std::string ticks(longest_backtick_run(text) + 1, '`');
  // A span that starts or ends with a backtick needs a space between it and the delimiters.
  const std::string pad = text.front() == '`' || text.back() == '`' ? " " : "";
  return ticks + pad + text + pad + ticks;
}

std::string table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::string out = row(header) + "|";
  for (std::size_t i = 0; i < header.size(); ++i) out += "---|";
  out += "\n";
  for (const auto& r : rows) out += row(r);
  return out;
}

std::string fenced(const std::string& text, const std::string& language) {
  const std::string fence(std::max<std::size_t>(3, longest_backtick_run(text) + 1), '`');
  std::string body = text;
  if (body.empty() || body.back() != '\n') body += '\n';
  return fence + language + "\n" + body + fence + "\n";
}

}  // namespace gradsweep::reference
