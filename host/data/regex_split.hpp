// A regular expression that cuts text into pieces, as Hugging Face tokenizers' Split pre-tokenizer does with
// behavior "Isolated": every match is a piece, and so is the text between two matches.
//
// tokenizers compiles its patterns with Oniguruma; we use PCRE2 with UTF and UCP, whose syntax and semantics
// agree on what tokenizer patterns use: \p{L}, \p{N}, (?i:...) (with Unicode case folding: "'ſ" matches
// "'s"), lookahead, greedy and counted repeats, alternation tried left to right. Known difference: PCRE2
// counts U+180E (MONGOLIAN VOWEL SEPARATOR) as \s, Oniguruma does not. Invalid UTF-8 in the text (tokenizers
// never sees any: Rust strings are UTF-8) matches nothing, so it ends up in the pieces between matches.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gradsweep::data {

class RegexSplit {
 public:
  // Throws std::invalid_argument with PCRE2's message and the offset in the pattern. `literal`: the pattern
  // is a plain string (tokenizers' {"String": ...}), not a regular expression.
  explicit RegexSplit(const std::string& pattern, bool literal = false);

  // Appends the pieces of `text` to `pieces`, in order; empty pieces are left out, so their concatenation
  // is `text`. An empty match splits the text there and moves the search one character on, as tokenizers'
  // Oniguruma iterator does. Thread-safe. Throws std::runtime_error if PCRE2 fails (a resource limit).
  void split(std::string_view text, std::vector<std::string_view>& pieces) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Compiled;
  std::string pattern_;
  std::shared_ptr<const Compiled> compiled_;
};

}  // namespace gradsweep::data
