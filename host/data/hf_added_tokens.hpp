// The "added_tokens" of a Hugging Face tokenizer.json (special tokens such as "<|endoftext|>", and tokens
// added after training): each is found in the text as written, before pre-tokenization, and becomes its own
// id; the text between them goes through the pre-tokenizer and the model.
//
// As tokenizers' AddedVocabulary: the tokens with "normalized": false are matched first over the whole
// text, then those with "normalized": true over what remains (the same text: gradsweep accepts no
// normalizer); each pass takes the leftmost match, and the longest token there. "lstrip"/"rstrip" make a
// match take the whitespace on its left/right with it. "single_word" is refused.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gradsweep::data {

class HfAddedTokens {
 public:
  struct Token {
    std::string content;
    int32_t id;
    bool normalized, lstrip, rstrip;
  };
  // A stretch of text: an added token (id >= 0) or plain text for the pre-tokenizer (id -1).
  struct Segment {
    std::string_view text;
    int32_t id;
  };

  // `added_tokens`: tokenizer.json's list (null: none). Throws std::invalid_argument on a malformed entry or
  // one with "single_word": true.
  explicit HfAddedTokens(const nlohmann::json& added_tokens);

  // `text` cut into segments, in order; their concatenation is `text`, and no segment is empty.
  std::vector<Segment> split(std::string_view text) const;

  // The token with this content or id, or nullptr.
  const Token* find(std::string_view content) const;
  const Token* find(int32_t id) const;
  // The largest id (-1 without tokens).
  int32_t max_id() const { return max_id_; }

 private:
  // One pass: the tokens of one "normalized" value, indexed by their first byte, longest first.
  struct Pass {
    std::vector<std::vector<size_t>> by_first_byte = std::vector<std::vector<size_t>>(256);
    bool empty = true;
  };
  void split_pass(const Pass& pass, std::string_view text, std::vector<Segment>& out) const;
  size_t match_at(const Pass& pass, std::string_view text, size_t at) const;  // token index + 1, or 0

  std::vector<Token> tokens_;
  std::unordered_map<std::string, size_t> by_content_;
  std::unordered_map<int32_t, size_t> by_id_;
  Pass raw_, normalized_;
  int32_t max_id_ = -1;
};

}  // namespace gradsweep::data
