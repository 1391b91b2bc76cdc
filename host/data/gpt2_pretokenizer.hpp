// GPT-2's pre-tokenizer: cuts text into the pieces that byte-level BPE then merges within (never across).
//
// GPT-2 uses the regular expression
//     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// std::regex has no \p{...} classes, so this is the same alternation written out by hand over bytes, with
// one approximation: without a Unicode table,
//   - letters (\p{L}) are ASCII letters and EVERY byte >= 0x80 (so a UTF-8 character is never split),
//   - numbers (\p{N}) are ASCII digits,
//   - whitespace (\s) is space, \t, \n, \v, \f, \r.
// ASCII text is cut exactly as GPT-2 cuts it. Non-ASCII punctuation, digits or spaces (an em dash, a
// non-breaking space) join the neighbouring letters' piece instead of forming their own, which gives a
// different but still valid encoding: decode(encode(x)) == x holds for every input, because BPE is byte-level.
#pragma once

#include <string_view>
#include <vector>

namespace gradsweep::data {

// The pieces, in order; their concatenation is `text`. Views into `text`.
std::vector<std::string_view> gpt2_pretokenize(std::string_view text);

}  // namespace gradsweep::data
