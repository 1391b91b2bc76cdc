#include "data/gpt2_pretokenizer.hpp"

namespace gradsweep::data {
namespace {

bool is_letter(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80; }
bool is_number(unsigned char c) { return c >= '0' && c <= '9'; }
bool is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
bool is_other(unsigned char c) { return !is_space(c) && !is_letter(c) && !is_number(c); }

// Length of the contraction ('s 't 're 've 'm 'll 'd, lowercase only, as in GPT-2) at `i`, or 0.
size_t contraction_length(std::string_view s, size_t i) {
  if (s[i] != '\'' || i + 1 >= s.size()) return 0;
  const char a = s[i + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 < s.size()) {
    const char b = s[i + 2];
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  }
  return 0;
}

// ` ?C+` at `i` for the class C: the length matched, or 0.
template <class Class>
size_t optional_space_then_run(std::string_view s, size_t i, Class in_class) {
  size_t j = i;
  if (s[j] == ' ') ++j;
  const size_t start = j;
  while (j < s.size() && in_class(static_cast<unsigned char>(s[j]))) ++j;
  return j > start ? j - i : 0;
}

}  // namespace

std::vector<std::string_view> gpt2_pretokenize(std::string_view text) {
  std::vector<std::string_view> pieces;
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    // The alternatives in the pattern's order; the first that matches wins, as in a regex alternation.
    size_t len = contraction_length(text, i);
    if (len == 0) len = optional_space_then_run(text, i, is_letter);
    if (len == 0) len = optional_space_then_run(text, i, is_number);
    if (len == 0) len = optional_space_then_run(text, i, is_other);
    if (len == 0) {
      // Here text[i] is whitespace. \s+(?!\S): the whole run if it ends the text, otherwise the run minus
      // its last character, which then leads the next piece (" word"); a single space before a
      // non-space falls through to \s+ and stays alone.
      size_t end = i;
      while (end < n && is_space(static_cast<unsigned char>(text[end]))) ++end;
      if (end < n && end - i > 1) --end;
      len = end - i;
    }
    pieces.push_back(text.substr(i, len));
    i += len;
  }
  return pieces;
}

}  // namespace gradsweep::data
