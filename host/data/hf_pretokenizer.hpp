// The "pre_tokenizer" of a byte-level Hugging Face tokenizer.json: what cuts plain text (between added tokens)
// into the pieces that BPE merges within, never across. Two layouts are read:
//   {"type": "ByteLevel", "add_prefix_space": ..., "use_regex": true}        GPT-2's (its regex, below)
//   {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": ...},
//        "behavior": "Isolated", "invert": false}, ..., {"type": "ByteLevel", "use_regex": false}]}   Llama-3's
// that is, any number of Isolated Splits, then one ByteLevel, last. ByteLevel's add_prefix_space puts a space
// before every piece that does not start with one, as tokenizers does. Anything else (Whitespace, Metaspace,
// Digits, BertPreTokenizer, other Split behaviours, invert) is refused naming it.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "data/regex_split.hpp"

namespace gradsweep::data {

// The pattern ByteLevel applies when use_regex is true (tokenizers' pre_tokenizers/byte_level.rs).
inline constexpr const char* kGpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class HfPreTokenizer {
 public:
  // `pre_tokenizer`: tokenizer.json's object. Throws std::invalid_argument naming an unsupported type,
  // behaviour or layout, or a pattern that does not compile.
  explicit HfPreTokenizer(const nlohmann::json& pre_tokenizer);

  // Appends the pieces of `text` (raw bytes, no added tokens in it) to `pieces`; none is empty.
  void split(std::string_view text, std::vector<std::string>& pieces) const;

 private:
  void add_split(const nlohmann::json& step);
  void set_byte_level(const nlohmann::json& step);

  std::vector<RegexSplit> splits_;  // the Split steps, in order
  bool add_prefix_space_ = false;
  std::vector<RegexSplit> byte_level_regex_;  // GPT-2's pattern when use_regex is true (at most one)
};

}  // namespace gradsweep::data
