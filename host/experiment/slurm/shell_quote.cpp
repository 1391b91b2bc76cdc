#include "experiment/slurm/shell_quote.hpp"

#include <cctype>
#include <stdexcept>

namespace gradsweep::experiment::slurm {
namespace {

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (!std::isdigit(c)) return false;
  return true;
}

// "a:b:c" -> true when there are 1..max_fields fields of digits.
bool digit_fields(std::string_view s, int max_fields) {
  int fields = 0;
  while (true) {
    const auto colon = s.find(':');
    if (!all_digits(s.substr(0, colon)) || ++fields > max_fields) return false;
    if (colon == std::string_view::npos) return true;
    s.remove_prefix(colon + 1);
  }
}

std::string printable(std::string_view value) {
  std::string out;
  for (unsigned char c : value) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\0')
      out += "\\0";
    else
      out += static_cast<char>(c);
  }
  return out;
}

}  // namespace

std::string shell_quote(std::string_view value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  out += '\'';
  return out;
}

std::string shell_join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += ' ';
    out += shell_quote(w);
  }
  return out;
}

void check_slurm_time(std::string_view value, std::string_view what) {
  if (value == "UNLIMITED" || value == "INFINITE") return;
  bool ok;
  if (const auto dash = value.find('-'); dash != std::string_view::npos)
    ok = all_digits(value.substr(0, dash)) && digit_fields(value.substr(dash + 1), 3);
  else
    ok = digit_fields(value, 3);
  if (!ok)
    throw std::invalid_argument(std::string(what) + ": '" + printable(value) +
                                "' is not a Slurm time (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED)");
}

void check_plain_token(std::string_view value, std::string_view what) {
  bool ok = !value.empty();
  for (unsigned char c : value)
    if (!std::isalnum(c) && c != '_' && c != '.' && c != '-') ok = false;
  if (!ok)
    throw std::invalid_argument(std::string(what) + ": '" + printable(value) +
                                "' may only hold letters, digits, '_', '.' and '-'");
}

void check_single_line(std::string_view value, std::string_view what) {
  if (value.find_first_of(std::string_view("\n\r\0", 3)) != std::string_view::npos)
    throw std::invalid_argument(std::string(what) + ": '" + printable(value) + "' holds a line break or NUL");
}

}  // namespace gradsweep::experiment::slurm
